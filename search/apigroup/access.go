package apigroup

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// Access says which clusters' objects a user may see: those of the
// ManagedClusters the user may get (docs/search.md).
type Access interface {
	// MayGetCluster reports whether u may get the ManagedCluster named
	// cluster ("" = every ManagedCluster).
	MayGetCluster(ctx context.Context, u user.Info, cluster string) (bool, error)
}

// accessTTL is how long an answer is reused; maxAnswers bounds the cache.
const (
	accessTTL  = 10 * time.Second
	maxAnswers = 16384
)

type reviews struct {
	cs  kubernetes.Interface
	now func() time.Time

	mu      sync.Mutex
	answers map[[32]byte]answer
}

type answer struct {
	allowed bool
	expires time.Time
}

// NewAccess asks the hub apiserver with SubjectAccessReviews (the hub needs
// create on subjectaccessreviews), reusing an answer for 10 s.
func NewAccess(cs kubernetes.Interface) Access {
	return &reviews{cs: cs, now: time.Now, answers: map[[32]byte]answer{}}
}

// reviewKey is a digest of everything a review asks: the user's name, UID,
// groups (in any order) and extra, and the cluster.
func reviewKey(u user.Info, cluster string) [32]byte {
	groups := append([]string(nil), u.GetGroups()...)
	sort.Strings(groups)
	extra := u.GetExtra()
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([][2]any, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, [2]any{k, extra[k]})
	}
	b, _ := json.Marshal([]any{u.GetName(), u.GetUID(), groups, pairs, cluster})
	return sha256.Sum256(b)
}

func (r *reviews) MayGetCluster(ctx context.Context, u user.Info, cluster string) (bool, error) {
	key := reviewKey(u, cluster)
	now := r.now()
	r.mu.Lock()
	if a, ok := r.answers[key]; ok && now.Before(a.expires) {
		r.mu.Unlock()
		return a.allowed, nil
	}
	r.mu.Unlock()
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	sar, err := r.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Group: clusterv1.GroupName, Resource: "managedclusters", Name: cluster},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review (get managedcluster %q for %s): %w", cluster, u.GetName(), err)
	}
	r.mu.Lock()
	if len(r.answers) >= maxAnswers {
		for k, a := range r.answers {
			if !now.Before(a.expires) {
				delete(r.answers, k)
			}
		}
		if len(r.answers) >= maxAnswers {
			clear(r.answers)
		}
	}
	r.answers[key] = answer{sar.Status.Allowed, now.Add(accessTTL)}
	r.mu.Unlock()
	return sar.Status.Allowed, nil
}

// visible are the clusters among candidates whose objects u may see; all is
// true when u may get every ManagedCluster. Reviews of single clusters run
// eight at a time.
func visible(ctx context.Context, a Access, u user.Info, candidates []string) (all bool, out []string, err error) {
	if all, err := a.MayGetCluster(ctx, u, ""); err != nil || all {
		return all, nil, err
	}
	allowed := make([]bool, len(candidates))
	errs := make([]error, len(candidates))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, c := range candidates {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			allowed[i], errs[i] = a.MayGetCluster(ctx, u, c)
		}()
	}
	wg.Wait()
	for i, c := range candidates {
		if errs[i] != nil {
			return false, nil, errs[i]
		}
		if allowed[i] {
			out = append(out, c)
		}
	}
	return false, out, nil
}
