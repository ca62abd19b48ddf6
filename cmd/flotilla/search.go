package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"flotilla.dev/flotilla/internal/printer"
	"flotilla.dev/flotilla/search/searchapi"
)

// shortNames are kubectl's short names of the resources searched by default.
var shortNames = map[string]string{
	"po": "pods", "deploy": "deployments", "svc": "services", "ns": "namespaces", "no": "nodes", "cm": "configmaps",
	"sts": "statefulsets", "ds": "daemonsets", "rs": "replicasets", "sa": "serviceaccounts", "pvc": "persistentvolumeclaims",
	"ing": "ingresses", "netpol": "networkpolicies", "cj": "cronjobs",
}

// searchFlags are `flotilla search`'s filters.
type searchFlags struct {
	clusters, clusterSelector, selector, fieldSelector, namespace string
	image, owner, namePrefix, phase, reason                       string
	notReady                                                      bool
	limit                                                         int
}

// query is the flags as the search API's parameters.
func (f searchFlags) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("cluster", f.clusters)
	set("clusterSelector", f.clusterSelector)
	set("labelSelector", f.selector)
	set("fieldSelector", f.fieldSelector)
	set("image", f.image)
	set("owner", f.owner)
	set("namePrefix", f.namePrefix)
	set("phase", f.phase)
	set("reason", f.reason)
	if f.notReady {
		q.Set("ready", "false")
	}
	return q
}

// newSearchCommand is `flotilla search RESOURCE`: the objects of every
// cluster the user may see, from the hub's search index.
func newSearchCommand() *cobra.Command {
	var (
		kubeconfig, kctx, output string
		f                        searchFlags
	)
	cmd := &cobra.Command{
		Use:   "search RESOURCE",
		Short: "Find objects across the fleet's clusters (the search addon's index on the hub), as kubectl get would list them",
		Long: `Find objects across the fleet: every cluster whose ManagedCluster you may get, whose
search addon is enabled (flotilla addon enable --names search).

  flotilla search pods --cluster-selector env=prod -l app=web --image nginx:1.25
  flotilla search deployments --not-ready
  flotilla search pods --reason CrashLoopBackOff -o yaml

The same index answers kubectl, through the hub apiserver (docs/search.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			if f.limit < 0 {
				return fmt.Errorf("--limit %d: give a number of objects, 0 for all", f.limit)
			}
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			c, err := searchapi.NewClient(cfg)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			lists, err := c.Resources(ctx)
			if err != nil {
				return fmt.Errorf("read what the clusters sync (is the search addon enabled and the hub's aggregated API up?): %w", err)
			}
			gvr, res, err := findResource(lists, args[0])
			if err != nil {
				return err
			}
			q := f.query()
			if output == "" || output == "table" {
				return searchTable(cmd.OutOrStdout(), c, cmd, gvr, res, f, q)
			}
			all := &unstructured.UnstructuredList{}
			all.SetAPIVersion("v1")
			all.SetKind("List")
			for {
				page, err := c.List(ctx, gvr, f.namespace, pageQuery(q, f.limit, len(all.Items)))
				if err != nil {
					return err
				}
				all.Items = append(all.Items, page.Items...)
				if page.GetContinue() == "" || (f.limit > 0 && len(all.Items) >= f.limit) {
					break
				}
				q.Set("continue", page.GetContinue())
			}
			return printer.Print(cmd.OutOrStdout(), output, all, nil)
		},
	}
	fl := cmd.Flags()
	addHubKubeconfigFlags(fl, &kubeconfig, &kctx)
	printer.AddFlag(cmd, &output)
	fl.StringVar(&f.clusters, "cluster", "", "comma-separated cluster names to search (default: every cluster you may see)")
	fl.StringVar(&f.clusterSelector, "cluster-selector", "", "label selector of the ManagedClusters to search, e.g. env=prod")
	fl.StringVarP(&f.selector, "selector", "l", "", "label selector of the objects, e.g. app=web")
	fl.StringVar(&f.fieldSelector, "field-selector", "", "field selector: metadata.name, metadata.namespace, status.phase, status.ready, status.reason, image, owner")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace to search (default: all)")
	fl.StringVar(&f.image, "image", "", "a container image, as the spec writes it, e.g. nginx:1.25")
	fl.StringVar(&f.owner, "owner", "", "the controller owner, Kind/name, e.g. ReplicaSet/web-7d9f")
	fl.StringVar(&f.namePrefix, "name-prefix", "", "the start of the objects' names")
	fl.StringVar(&f.phase, "phase", "", "status.phase, e.g. Pending")
	fl.StringVar(&f.reason, "reason", "", "a container's waiting or terminated reason, e.g. CrashLoopBackOff")
	fl.BoolVar(&f.notReady, "not-ready", false, "only objects not ready (Pods, Nodes, workloads short of ready replicas)")
	fl.IntVar(&f.limit, "limit", 0, "at most this many objects (default 0: all)")
	return cmd
}

// pageQuery is q with the page size for a search that has have objects of
// at most limit (0: all).
func pageQuery(q url.Values, limit, have int) url.Values {
	size := 500
	if limit > 0 && limit-have < size {
		size = limit - have
	}
	q.Set("limit", strconv.Itoa(size))
	return q
}

// findResource finds name (plural, singular, kind, short name, or
// resource.group) among what the clusters sync.
func findResource(lists []metav1.APIResourceList, name string) (schema.GroupVersionResource, metav1.APIResource, error) {
	want := strings.ToLower(name)
	if long, ok := shortNames[want]; ok {
		want = long
	}
	res, group, _ := strings.Cut(want, ".")
	var known []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			known = append(known, r.Name)
			if (r.Name == res || r.SingularName == res || strings.ToLower(r.Kind) == res) && (group == "" || group == gv.Group) {
				return gv.WithResource(r.Name), r, nil
			}
		}
	}
	if len(known) == 0 {
		return schema.GroupVersionResource{}, metav1.APIResource{}, fmt.Errorf("no cluster you may see syncs %q: you may see no cluster's objects (get on its ManagedCluster), or no cluster syncs yet", name)
	}
	return schema.GroupVersionResource{}, metav1.APIResource{}, fmt.Errorf("no cluster you may see syncs %q: they sync %s", name, strings.Join(known, ", "))
}

// searchTable prints the search as kubectl get would: CLUSTER, NAMESPACE
// (namespaced resources), then the server's columns.
func searchTable(w io.Writer, c *searchapi.Client, cmd *cobra.Command, gvr schema.GroupVersionResource, res metav1.APIResource, f searchFlags, q url.Values) error {
	rows := printer.Rows{}
	var header []string
	n := 0
	for {
		t, err := c.Table(cmd.Context(), gvr, f.namespace, pageQuery(q, f.limit, n))
		if err != nil {
			return err
		}
		if header == nil {
			for i, col := range t.ColumnDefinitions {
				header = append(header, strings.ToUpper(col.Name))
				if i == 0 && res.Namespaced {
					header = append(header, "NAMESPACE")
				}
			}
			rows.Header = header
		}
		for _, r := range t.Rows {
			var ns string
			var meta metav1.PartialObjectMetadata
			if err := json.Unmarshal(r.Object.Raw, &meta); err == nil {
				ns = meta.Namespace
			}
			var cells []string
			for i, cell := range r.Cells {
				cells = append(cells, fmt.Sprint(cell))
				if i == 0 && res.Namespaced {
					cells = append(cells, ns)
				}
			}
			rows.Add(cells...)
			n++
		}
		if t.Continue == "" || (f.limit > 0 && n >= f.limit) {
			break
		}
		q.Set("continue", t.Continue)
	}
	if n == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "No %s found in the clusters you may see.\n", res.Name)
		return nil
	}
	return printer.WriteTable(w, rows)
}
