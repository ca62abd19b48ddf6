// Package ops holds what the `flotilla addon` and `flotilla get addon`
// commands do, as functions over a hub client (the CLI only parses flags):
// enable (create ManagedClusterAddOns), disable (delete them), and list
// (one row per addon and cluster, with its Available, Degraded and
// Progressing status), with clusteradm's semantics.
package ops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EnableOptions says which addons to enable where.
type EnableOptions struct {
	// Names of the addons (ClusterManagementAddOns). Required.
	Names []string
	// Clusters to enable them on. Required.
	Clusters []string
	// Namespace is spec.installNamespace. Default "": the addon's default.
	Namespace string
	// Annotations set on each ManagedClusterAddOn.
	Annotations map[string]string
}

// Enable creates (or updates) a ManagedClusterAddOn per addon and cluster. It
// refuses, before writing anything, names of addons or clusters the hub does not have.
func Enable(ctx context.Context, c client.Client, o EnableOptions) ([]string, error) {
	if len(o.Names) == 0 || len(o.Clusters) == 0 {
		return nil, errors.New("enable needs --names and --clusters")
	}
	if err := checkExist(ctx, c, o.Names, o.Clusters); err != nil {
		return nil, err
	}
	var done []string
	for _, cl := range o.Clusters {
		for _, n := range o.Names {
			var mca addonv1alpha1.ManagedClusterAddOn
			err := c.Get(ctx, types.NamespacedName{Namespace: cl, Name: n}, &mca)
			switch {
			case apierrors.IsNotFound(err):
				mca = addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: cl, Annotations: o.Annotations},
					Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: o.Namespace}}
				err = c.Create(ctx, &mca)
			case err == nil:
				for k, v := range o.Annotations {
					if mca.Annotations == nil {
						mca.Annotations = map[string]string{}
					}
					mca.Annotations[k] = v
				}
				if o.Namespace != "" {
					mca.Spec.InstallNamespace = o.Namespace
				}
				err = c.Update(ctx, &mca)
			}
			if err != nil {
				return done, fmt.Errorf("enable addon %s on cluster %s: %w", n, cl, err)
			}
			done = append(done, cl+"/"+n)
		}
	}
	return done, nil
}

func checkExist(ctx context.Context, c client.Client, names, clusters []string) error {
	var problems []string
	for _, n := range names {
		if err := c.Get(ctx, types.NamespacedName{Name: n}, &addonv1alpha1.ClusterManagementAddOn{}); apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("addon %q is not on the hub (no ClusterManagementAddOn; `flotilla get addon` lists them)", n))
		} else if err != nil {
			return err
		}
	}
	for _, cl := range clusters {
		if err := c.Get(ctx, types.NamespacedName{Name: cl}, &clusterv1.ManagedCluster{}); apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("cluster %q is not a managed cluster of the hub", cl))
		} else if err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; ") + "; nothing was changed")
	}
	return nil
}

// DisableOptions says which addons to disable where.
type DisableOptions struct {
	// Names of the addons. Required.
	Names []string
	// Clusters to disable them on; AllClusters instead disables them everywhere.
	Clusters    []string
	AllClusters bool
}

// Disable deletes the ManagedClusterAddOns; the hub then runs the addon's
// pre-delete hook, removes its works and its agent's rights.
func Disable(ctx context.Context, c client.Client, o DisableOptions) ([]string, error) {
	if len(o.Names) == 0 {
		return nil, errors.New("disable needs --names")
	}
	if o.AllClusters == (len(o.Clusters) > 0) {
		return nil, errors.New("disable needs either --clusters or --all-clusters")
	}
	var done []string
	for _, n := range o.Names {
		clusters := o.Clusters
		if o.AllClusters {
			var list addonv1alpha1.ManagedClusterAddOnList
			if err := c.List(ctx, &list); err != nil {
				return done, err
			}
			clusters = nil
			for _, m := range list.Items {
				if m.Name == n {
					clusters = append(clusters, m.Namespace)
				}
			}
		}
		for _, cl := range clusters {
			err := c.Delete(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: cl}})
			if apierrors.IsNotFound(err) {
				if !o.AllClusters {
					return done, fmt.Errorf("addon %s is not enabled on cluster %s", n, cl)
				}
				continue
			}
			if err != nil {
				return done, fmt.Errorf("disable addon %s on cluster %s: %w", n, cl, err)
			}
			done = append(done, cl+"/"+n)
		}
	}
	return done, nil
}

// Row is one addon on one cluster (Cluster "" for an addon enabled nowhere).
type Row struct {
	Name        string `json:"name"`
	Cluster     string `json:"cluster,omitempty"`
	Available   string `json:"available,omitempty"`
	Degraded    string `json:"degraded,omitempty"`
	Progressing string `json:"progressing,omitempty"`
	// Message is the Available condition's message, or why the addon is not installed.
	Message string `json:"message,omitempty"`
}

// ListOptions filters List.
type ListOptions struct {
	// Name: only this addon. Cluster: only this cluster.
	Name, Cluster string
}

// List returns one row per ManagedClusterAddOn, plus one per addon enabled on
// no cluster (when no cluster is asked for), sorted by name then cluster.
func List(ctx context.Context, c client.Client, o ListOptions) ([]Row, error) {
	var cmas addonv1alpha1.ClusterManagementAddOnList
	if err := c.List(ctx, &cmas); err != nil {
		return nil, err
	}
	var mcas addonv1alpha1.ManagedClusterAddOnList
	var opts []client.ListOption
	if o.Cluster != "" {
		opts = append(opts, client.InNamespace(o.Cluster))
	}
	if err := c.List(ctx, &mcas, opts...); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var rows []Row
	for _, m := range mcas.Items {
		if o.Name != "" && m.Name != o.Name {
			continue
		}
		seen[m.Name] = true
		r := Row{Name: m.Name, Cluster: m.Namespace, Available: status(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable),
			Degraded: status(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionDegraded), Progressing: status(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing)}
		if a := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable); a != nil {
			r.Message = a.Message
		}
		if m.DeletionTimestamp != nil {
			r.Message = "being disabled"
		}
		rows = append(rows, r)
	}
	if o.Cluster == "" {
		for _, cma := range cmas.Items {
			if (o.Name == "" || cma.Name == o.Name) && !seen[cma.Name] {
				rows = append(rows, Row{Name: cma.Name, Message: "enabled on no cluster"})
				seen[cma.Name] = true
			}
		}
	}
	if o.Name != "" && !seen[o.Name] {
		where := ""
		if o.Cluster != "" {
			where = " on cluster " + o.Cluster
		}
		return nil, fmt.Errorf("addon %q not found%s", o.Name, where)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Name != rows[j].Name {
			return rows[i].Name < rows[j].Name
		}
		return rows[i].Cluster < rows[j].Cluster
	})
	return rows, nil
}

func status(cs []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(cs, t); c != nil {
		return string(c.Status)
	}
	return ""
}
