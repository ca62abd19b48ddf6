package web

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// User is an authenticated caller.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string]authenticationv1.ExtraValue
}

// Authorizer authenticates tokens and says which namespaces' policies a user
// may list.
type Authorizer interface {
	// Authenticate returns the token's user, or nil when the token is not valid.
	Authenticate(ctx context.Context, token string) (*User, error)
	// CanList reports whether u may list policies in namespace ("" = all namespaces).
	CanList(ctx context.Context, u *User, namespace string) (bool, error)
}

// cacheTTL is how long a TokenReview or SubjectAccessReview answer is reused.
const cacheTTL = 10 * time.Second

// maxCached bounds each answer cache. Anyone who reaches the port can send
// tokens, each a new entry: past the bound, expired answers are dropped, and
// if that is not enough the cache starts over, so memory stays bounded.
var maxCached = 4096

// remember caches v under k until cacheTTL from now, within maxCached.
func remember[K comparable, T any](m map[K]cached[T], k K, v T, now time.Time) {
	if _, ok := m[k]; !ok && len(m) >= maxCached {
		for old, c := range m {
			if !now.Before(c.expires) {
				delete(m, old)
			}
		}
		if len(m) >= maxCached {
			clear(m)
		}
	}
	m[k] = cached[T]{v, now.Add(cacheTTL)}
}

// apiserverAuthorizer asks the hub apiserver (TokenReview, SubjectAccessReview).
type apiserverAuthorizer struct {
	cs  kubernetes.Interface
	now func() time.Time

	mu     sync.Mutex
	tokens map[[32]byte]cached[*User]
	access map[string]cached[bool]
}

type cached[T any] struct {
	v       T
	expires time.Time
}

// NewAuthorizer checks tokens and access with the hub apiserver; the hub's
// identity needs create on tokenreviews and subjectaccessreviews.
func NewAuthorizer(cs kubernetes.Interface) Authorizer {
	return &apiserverAuthorizer{cs: cs, now: time.Now, tokens: map[[32]byte]cached[*User]{}, access: map[string]cached[bool]{}}
}

func (a *apiserverAuthorizer) Authenticate(ctx context.Context, token string) (*User, error) {
	key := sha256.Sum256([]byte(token))
	a.mu.Lock()
	if c, ok := a.tokens[key]; ok && a.now().Before(c.expires) {
		a.mu.Unlock()
		return c.v, nil
	}
	a.mu.Unlock()
	tr, err := a.cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	var u *User
	if tr.Status.Authenticated {
		ui := tr.Status.User
		u = &User{Name: ui.Username, UID: ui.UID, Groups: ui.Groups, Extra: ui.Extra}
	}
	a.mu.Lock()
	remember(a.tokens, key, u, a.now())
	a.mu.Unlock()
	return u, nil
}

// accessKey identifies a SubjectAccessReview: a digest of everything it
// asks (the user's name, UID, groups and extra, and the namespace),
// unambiguously encoded, so that two different identities (a scoped token
// of the same user, groups that join to the same string) never share an
// answer.
func accessKey(u *User, namespace string) string {
	groups := append([]string(nil), u.Groups...)
	sort.Strings(groups)
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	extra := make([][2]any, 0, len(keys))
	for _, k := range keys {
		extra = append(extra, [2]any{k, []string(u.Extra[k])})
	}
	b, _ := json.Marshal([]any{u.Name, u.UID, groups, extra, namespace})
	sum := sha256.Sum256(b)
	return string(sum[:])
}

func (a *apiserverAuthorizer) CanList(ctx context.Context, u *User, namespace string) (bool, error) {
	key := accessKey(u, namespace)
	a.mu.Lock()
	if c, ok := a.access[key]; ok && a.now().Before(c.expires) {
		a.mu.Unlock()
		return c.v, nil
	}
	a.mu.Unlock()
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "list", Group: policyv1.GroupVersion.Group, Resource: "policies",
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review (list policies in %q for %s): %w", namespace, u.Name, err)
	}
	a.mu.Lock()
	remember(a.access, key, sar.Status.Allowed, a.now())
	a.mu.Unlock()
	return sar.Status.Allowed, nil
}
