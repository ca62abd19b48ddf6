package ops

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/printer"
)

// PrintWorks prints works with the columns CLUSTER NAME MANIFESTS APPLIED
// AVAILABLE AGE, or the list as JSON/YAML.
func PrintWorks(w io.Writer, format string, works []workv1.ManifestWork, now time.Time) error {
	list := &workv1.ManifestWorkList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: works}
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = workv1.GroupVersion.String(), "ManifestWork"
		list.Items[i].ManagedFields = nil
	}
	return printer.Print(w, format, list, func() printer.Rows {
		rows := printer.Rows{Header: []string{"CLUSTER", "NAME", "MANIFESTS", "APPLIED", "AVAILABLE", "AGE"}}
		for _, wk := range list.Items {
			rows.Add(wk.Namespace, wk.Name, fmt.Sprint(len(wk.Spec.Workload.Manifests)),
				condStatus(wk.Status.Conditions, workv1.WorkApplied), condStatus(wk.Status.Conditions, workv1.WorkAvailable),
				age(wk.CreationTimestamp, now))
		}
		return rows
	})
}

// PrintWork shows one work: its conditions, then one row per manifest with its
// conditions, feedback values and, when something is wrong (a condition not
// True, else a conflict with another work), the message.
func PrintWork(w io.Writer, format string, wk *workv1.ManifestWork) error {
	wk = wk.DeepCopy()
	wk.APIVersion, wk.Kind = workv1.GroupVersion.String(), "ManifestWork"
	wk.ManagedFields = nil
	if format != printer.Table && format != "" {
		return printer.Print(w, format, wk, nil)
	}
	fmt.Fprintf(w, "Work:      %s\nCluster:   %s\nManifests: %d\n", wk.Name, wk.Namespace, len(wk.Spec.Workload.Manifests))
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		if c := meta.FindStatusCondition(wk.Status.Conditions, typ); c != nil {
			fmt.Fprintf(w, "%-10s %s (%s) %s\n", typ+":", c.Status, c.Reason, c.Message)
		} else {
			fmt.Fprintf(w, "%-10s Unknown (no status yet: is the cluster's agent running?)\n", typ+":")
		}
	}
	if c := meta.FindStatusCondition(wk.Status.Conditions, ocm.WorkConditionConflict); c != nil && c.Status == metav1.ConditionTrue {
		fmt.Fprintf(w, "%-10s %s (%s) %s\n", ocm.WorkConditionConflict+":", c.Status, c.Reason, c.Message)
	}
	fmt.Fprintln(w)
	rows := printer.Rows{Header: []string{"#", "KIND", "NAMESPACE", "NAME", "APPLIED", "AVAILABLE", "FEEDBACK", "MESSAGE"}}
	for _, m := range wk.Status.ResourceStatus.Manifests {
		rm := m.ResourceMeta
		var msg string
		for _, typ := range []string{workv1.ManifestApplied, workv1.ManifestAvailable, "StatusFeedbackSynced"} {
			if c := meta.FindStatusCondition(m.Conditions, typ); c != nil && c.Status != metav1.ConditionTrue {
				msg = c.Message
				break
			}
		}
		if c := meta.FindStatusCondition(m.Conditions, ocm.WorkConditionConflict); msg == "" && c != nil && c.Status == metav1.ConditionTrue {
			msg = c.Message
		}
		rows.Add(fmt.Sprint(rm.Ordinal), rm.Kind, rm.Namespace, rm.Name,
			condStatus(m.Conditions, workv1.ManifestApplied), condStatus(m.Conditions, workv1.ManifestAvailable),
			feedback(m.StatusFeedbacks.Values), msg)
	}
	return printer.WriteTable(w, rows)
}

// condStatus is a condition's status, Unknown when it is not there.
func condStatus(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}

// feedback is a manifest's feedback values as name=value, comma-separated.
func feedback(values []workv1.FeedbackValue) string {
	var parts []string
	for _, v := range values {
		var s string
		switch {
		case v.Value.Integer != nil:
			s = fmt.Sprint(*v.Value.Integer)
		case v.Value.String != nil:
			s = *v.Value.String
		case v.Value.Boolean != nil:
			s = fmt.Sprint(*v.Value.Boolean)
		case v.Value.JsonRaw != nil:
			s = *v.Value.JsonRaw
		}
		parts = append(parts, v.Name+"="+s)
	}
	return strings.Join(parts, ",")
}

// age is how long ago t was, as kubectl says it.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
