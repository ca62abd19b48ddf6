package apigroup

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"flotilla.dev/flotilla/search/index"
)

// list is a page as the resource's List (<Kind>List), each object carrying
// its cluster in the annotation ClusterLabel.
func list(res index.Resource, page index.Page) map[string]any {
	items := make([]any, 0, len(page.Items))
	for _, h := range page.Items {
		items = append(items, h.Object.Object)
	}
	meta := map[string]any{}
	if page.Continue != "" {
		meta["continue"] = page.Continue
	}
	return map[string]any{"apiVersion": res.GroupVersion().String(), "kind": res.Kind + "List", "metadata": meta, "items": items}
}

// column is a Table column and how a row's cell is read.
type column struct {
	def  metav1.TableColumnDefinition
	cell func(h index.Hit, now time.Time) any
}

func col(name, typ string, cell func(h index.Hit, now time.Time) any) column {
	return column{metav1.TableColumnDefinition{Name: name, Type: typ}, cell}
}

// columns are a kind's columns after CLUSTER and NAME, as kubectl prints
// that kind, and AGE.
func columns(kind string) []column {
	str := func(path ...string) func(index.Hit, time.Time) any {
		return func(h index.Hit, _ time.Time) any {
			v, _, _ := unstructured.NestedFieldNoCopy(h.Object.Object, path...)
			if v == nil {
				return ""
			}
			return fmt.Sprint(v)
		}
	}
	num := func(path ...string) func(index.Hit, time.Time) any {
		return func(h index.Hit, _ time.Time) any {
			v, _, _ := unstructured.NestedFieldNoCopy(h.Object.Object, path...)
			if v == nil {
				return int64(0)
			}
			return v
		}
	}
	ready := func(h index.Hit, _ time.Time) any {
		have, _, _ := unstructured.NestedFieldNoCopy(h.Object.Object, "status", "readyReplicas")
		want, ok, _ := unstructured.NestedFieldNoCopy(h.Object.Object, "spec", "replicas")
		if have == nil {
			have = 0
		}
		if !ok {
			want = 1
		}
		return fmt.Sprintf("%v/%v", have, want)
	}
	switch kind {
	case "Pod":
		return []column{col("Ready", "string", podReady), col("Status", "string", podStatus), col("Restarts", "integer", podRestarts), col("Node", "string", str("spec", "nodeName"))}
	case "Deployment":
		return []column{col("Ready", "string", ready), col("Up-to-date", "integer", num("status", "updatedReplicas")), col("Available", "integer", num("status", "availableReplicas"))}
	case "StatefulSet":
		return []column{col("Ready", "string", ready)}
	case "ReplicaSet":
		return []column{col("Desired", "integer", num("spec", "replicas")), col("Current", "integer", num("status", "replicas")), col("Ready", "integer", num("status", "readyReplicas"))}
	case "DaemonSet":
		return []column{col("Desired", "integer", num("status", "desiredNumberScheduled")), col("Ready", "integer", num("status", "numberReady"))}
	case "Service":
		return []column{col("Type", "string", str("spec", "type")), col("Cluster-IP", "string", str("spec", "clusterIP"))}
	case "Namespace":
		return []column{col("Status", "string", str("status", "phase"))}
	case "Node":
		return []column{col("Status", "string", func(h index.Hit, _ time.Time) any {
			if cond(h.Object, "Ready") == "True" {
				return "Ready"
			}
			return "NotReady"
		}), col("Version", "string", str("status", "nodeInfo", "kubeletVersion"))}
	}
	return nil
}

func cond(u *unstructured.Unstructured, t string) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func containerStatuses(u *unstructured.Unstructured) []map[string]any {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "containerStatuses")
	var out []map[string]any
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func podReady(h index.Hit, _ time.Time) any {
	cs, _, _ := unstructured.NestedSlice(h.Object.Object, "spec", "containers")
	n := 0
	for _, s := range containerStatuses(h.Object) {
		if r, _ := s["ready"].(bool); r {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(cs))
}

// podStatus is kubectl's STATUS, simplified: a container's waiting or
// terminated reason, else the phase.
func podStatus(h index.Hit, _ time.Time) any {
	if h.Object.GetDeletionTimestamp() != nil {
		return "Terminating"
	}
	for _, s := range containerStatuses(h.Object) {
		for _, state := range []string{"waiting", "terminated"} {
			if r, _, _ := unstructured.NestedString(s, "state", state, "reason"); r != "" {
				return r
			}
		}
	}
	p, _, _ := unstructured.NestedString(h.Object.Object, "status", "phase")
	return p
}

func podRestarts(h index.Hit, _ time.Time) any {
	var n int64
	for _, s := range containerStatuses(h.Object) {
		switch c := s["restartCount"].(type) {
		case int64:
			n += c
		case float64:
			n += int64(c)
		}
	}
	return n
}

// table is a page as a meta.k8s.io Table: CLUSTER, NAME, the kind's
// columns, AGE; each row's object is the object's metadata (or the whole
// object when full), from which kubectl prints NAMESPACE with -A.
func table(res index.Resource, page index.Page, full bool, now time.Time) *metav1.Table {
	cols := append([]column{
		col("Cluster", "string", func(h index.Hit, _ time.Time) any { return h.Cluster }),
		{metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name"}, func(h index.Hit, _ time.Time) any { return h.Object.GetName() }},
	}, columns(res.Kind)...)
	cols = append(cols, col("Age", "string", func(h index.Hit, now time.Time) any {
		t := h.Object.GetCreationTimestamp()
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(now.Sub(t.Time))
	}))
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, ListMeta: metav1.ListMeta{Continue: page.Continue}}
	for _, c := range cols {
		c.def.Name = strings.ToUpper(c.def.Name[:1]) + c.def.Name[1:]
		t.ColumnDefinitions = append(t.ColumnDefinitions, c.def)
	}
	t.Rows = []metav1.TableRow{}
	for _, h := range page.Items {
		row := metav1.TableRow{}
		for _, c := range cols {
			row.Cells = append(row.Cells, c.cell(h, now))
		}
		if full {
			row.Object = runtime.RawExtension{Object: h.Object}
		} else {
			m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
			m.ObjectMeta = metav1.ObjectMeta{Name: h.Object.GetName(), Namespace: h.Object.GetNamespace(), UID: h.Object.GetUID(),
				ResourceVersion: h.Object.GetResourceVersion(), CreationTimestamp: h.Object.GetCreationTimestamp(), Labels: h.Object.GetLabels(),
				Annotations: map[string]string{ClusterLabel: h.Cluster}}
			row.Object = runtime.RawExtension{Object: m}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
