package governance_test

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/policy/gatekeeper/live"
)

// gatekeeperCluster is the cluster whose tests play Gatekeeper: its
// ConstraintTemplate CRD (not labelled as Flotilla's) exists before the
// agents start, so Flotilla's Rego engine stays off there.
const gatekeeperCluster = "cluster2"

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// gatekeeperCRD is crd as Gatekeeper would install it (no Flotilla label).
func gatekeeperCRD(crd *unstructured.Unstructured) *unstructured.Unstructured {
	crd.SetLabels(nil)
	return crd
}

func installFakeGatekeeper(ctx context.Context, cfg *rest.Config) error {
	return installCRD(ctx, cfg, gatekeeperCRD(live.TemplateCRD()))
}

func installCRD(ctx context.Context, cfg *rest.Config, crd *unstructured.Unstructured) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(crdsGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(crdsGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

func yamlToJSON(s string) ([]byte, error) { return yaml.YAMLToJSON([]byte(s)) }
