package controller

import (
	"context"
	"fmt"
	"reflect"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"flotilla.dev/flotilla/hub/placement/scheduling"
)

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// decisionsOfPlacement indexes PlacementDecisions by their placement label:
// finding one placement's decisions then does not walk every decision of its
// namespace (10,000 placements in one namespace: 10,000 per pass).
const decisionsOfPlacement = "flotilla.placementLabel"

func placementOfDecision(o client.Object) []string {
	if p, ok := o.GetLabels()[clusterv1beta1.PlacementLabel]; ok {
		return []string{p}
	}
	return nil
}

// currentDecisions lists the PlacementDecisions of p (labelled with its name),
// from the cache.
func (r *Reconciler) currentDecisions(ctx context.Context, p *clusterv1beta1.Placement) ([]clusterv1beta1.PlacementDecision, error) {
	var list clusterv1beta1.PlacementDecisionList
	err := r.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingFields{decisionsOfPlacement: p.Name})
	return list.Items, err
}

// writeDecisions makes the PlacementDecisions of p equal pages: it creates missing
// ones, updates those whose labels or decisions differ, and deletes the rest, in
// the order scheduling.PageWrites gives, so that no cluster decided before and
// after vanishes from every page between two writes. It writes nothing when they
// already match.
func (r *Reconciler) writeDecisions(ctx context.Context, p *clusterv1beta1.Placement, current []clusterv1beta1.PlacementDecision, pages []scheduling.Page) error {
	byName := map[string]*clusterv1beta1.PlacementDecision{}
	for i := range current {
		byName[current[i].Name] = &current[i]
	}
	writes, deletes := scheduling.PageWrites(pagesOf(current), pages)
	for _, pg := range writes {
		d, err := r.writePage(ctx, p, byName[pg.Name], pg)
		if err != nil {
			return err
		}
		byName[pg.Name] = d // a page may be written twice (see PageWrites)
	}
	// Pages with the right content but not (or no longer) owned by p: adopt them.
	for _, pg := range pages {
		if d := byName[pg.Name]; d != nil && !metav1.IsControlledBy(d, p) {
			if _, err := r.writePage(ctx, p, d, pg); err != nil {
				return err
			}
		}
	}
	for _, name := range deletes {
		d := byName[name]
		if err := client.IgnoreNotFound(r.Delete(ctx, d)); err != nil {
			return fmt.Errorf("delete PlacementDecision %s/%s: %w", p.Namespace, d.Name, err)
		}
	}
	return nil
}

// writePage creates d (when nil) or brings its labels, owner and decisions to pg.
func (r *Reconciler) writePage(ctx context.Context, p *clusterv1beta1.Placement, d *clusterv1beta1.PlacementDecision, pg scheduling.Page) (*clusterv1beta1.PlacementDecision, error) {
	if d == nil {
		d = &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: pg.Name, Namespace: p.Namespace, Labels: pg.Labels}}
		if err := controllerutil.SetControllerReference(p, d, r.Scheme()); err != nil {
			return nil, err
		}
		if err := r.Create(ctx, d); err != nil {
			return nil, fmt.Errorf("create PlacementDecision %s/%s: %w", p.Namespace, pg.Name, err)
		}
	} else if !labelsMatch(d.Labels, pg.Labels) || !metav1.IsControlledBy(d, p) {
		d = d.DeepCopy()
		for k, v := range pg.Labels {
			metav1.SetMetaDataLabel(&d.ObjectMeta, k, v)
		}
		// A page left by a deleted Placement of the same name (not garbage
		// collected yet) is taken over rather than fought over.
		var refs []metav1.OwnerReference
		for _, o := range d.OwnerReferences {
			if o.Kind == "Placement" && o.Name == p.Name && o.UID != p.UID {
				continue
			}
			refs = append(refs, o)
		}
		d.OwnerReferences = refs
		if err := controllerutil.SetControllerReference(p, d, r.Scheme()); err != nil {
			return nil, fmt.Errorf("PlacementDecision %s/%s: %w", p.Namespace, pg.Name, err)
		}
		if err := r.Update(ctx, d); err != nil {
			return nil, fmt.Errorf("update PlacementDecision %s/%s: %w", p.Namespace, pg.Name, err)
		}
	}
	if !reflect.DeepEqual(d.Status.Decisions, pg.Decisions) {
		d.Status.Decisions = pg.Decisions
		if err := r.Status().Update(ctx, d); err != nil {
			return nil, fmt.Errorf("update PlacementDecision %s/%s status: %w", p.Namespace, pg.Name, err)
		}
	}
	return d, nil
}

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// pagesOf turns the current decisions back into pages.
func pagesOf(current []clusterv1beta1.PlacementDecision) []scheduling.Page {
	pages := make([]scheduling.Page, 0, len(current))
	for _, d := range current {
		pages = append(pages, scheduling.Page{Name: d.Name, Labels: d.Labels, Decisions: d.Status.Decisions})
	}
	return pages
}

// keepPages keeps the current decisions as they are, so a misconfigured Placement
// keeps what it had (or gets one empty decision if it had none).
func keepPages(p *clusterv1beta1.Placement, current []clusterv1beta1.PlacementDecision) []scheduling.Page {
	if len(current) == 0 {
		return scheduling.Paginate(p.Name, []scheduling.Group{{Index: 0}}, false)
	}
	return pagesOf(current)
}
