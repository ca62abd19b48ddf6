// Package admission_test checks, on a real control plane with every CRD set
// and its admission policies installed the way `flotilla init` installs them,
// and no Flotilla process at all, what the apiserver refuses and admits per
// kind (docs/admission.md).
package admission_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/manifests"
	"flotilla.dev/flotilla/test/testenv"
)

// One control plane for the package, with every CRD set (and so every
// admission policy) installed the way `flotilla init` installs them, and no
// Flotilla process at all: what is refused here is refused by the apiserver.
var (
	cpConfig *rest.Config
	dyn      dynamic.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.New(testenv.Options{
		HubCRDs: []string{manifests.HubCRDs, manifests.KlusterletCRDs, manifests.PolicyCRDs, manifests.FlotillaCRDs},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer env.Stop()
	cpConfig = env.Hub.Config
	dyn = dynamic.NewForConfigOrDie(cpConfig)
	return m.Run()
}
