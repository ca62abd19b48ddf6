package badinput_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	// handledWithin is how long a good object may take to be handled after a bad input.
	handledWithin = 30 * time.Second
	tick          = 200 * time.Millisecond
	// cluster is the one managed cluster's name on the hub.
	cluster = "spoke"
)

// joinCluster joins cluster from spoke through the real path (join, CSR,
// accept) and runs its klusterlet, work agent included, until the test ends.
func joinCluster(t *testing.T, spoke *testenv.ControlPlane) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: token,
		ClusterName: cluster, NoDeployment: true}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := klusterlet.Run(ctx, klusterlet.Options{
			Registration: registration.Options{ClusterName: cluster, SpokeConfig: spoke.Config, HubKubeconfigDir: t.TempDir(),
				LeaseDurationSeconds: 5, StatusSyncInterval: time.Second, RetryInterval: time.Second},
			WorkStatusSyncInterval: time.Second,
		})
		if err != nil {
			t.Errorf("klusterlet %s: %v", cluster, err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{cluster}, Wait: true, Timeout: 2 * time.Minute}))
}

// clients reach the hub and the managed cluster as admin.
type clients struct {
	hub, spoke client.Client
}

func newClients(t *testing.T) clients {
	t.Helper()
	h, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	s, err := client.New(env.Clusters[0].Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	return clients{hub: h, spoke: s}
}

// onSpoke tells which kinds live on the managed cluster.
func onSpoke(kind string) bool {
	return kind == "ConfigurationPolicy"
}

// For picks the client of the cluster an object lives on.
func (cs clients) For(u *unstructured.Unstructured) client.Client {
	if onSpoke(u.GetKind()) {
		return cs.spoke
	}
	return cs.hub
}

// decode reads a multi-document YAML into objects.
func decode(t *testing.T, text string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if doc = bytes.TrimSpace(doc); doc[0] == '{' { // JSON: no YAML limit on key length
			require.NoError(t, json.Unmarshal(doc, &u.Object), "fixture:\n%.500s", doc)
		} else {
			require.NoError(t, yaml.Unmarshal(doc, &u.Object), "fixture:\n%.500s", doc)
		}
		out = append(out, u)
	}
}

// create creates objs in order and deletes them when t ends; it returns the
// first error, leaving the rest uncreated.
func (cs clients) create(t *testing.T, objs []*unstructured.Unstructured) error {
	t.Helper()
	for _, u := range objs {
		u := u.DeepCopy()
		c := cs.For(u)
		if err := c.Create(context.Background(), u); err != nil {
			return fmt.Errorf("create %s %s: %w", u.GetKind(), key(u), err)
		}
		t.Cleanup(func() { cs.remove(t, c, u) })
	}
	return nil
}

// remove deletes u (gone already is fine).
func (cs clients) remove(t *testing.T, c client.Client, u *unstructured.Unstructured) {
	ctx := context.Background()
	if err := c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete %s %s: %v", u.GetKind(), key(u), err)
	}
}

func key(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// get reads the current object of u's kind and name.
func (cs clients) get(c require.TestingT, u *unstructured.Unstructured) *unstructured.Unstructured {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(u.GroupVersionKind())
	require.NoError(c, cs.For(u).Get(context.Background(), types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}, cur))
	return cur
}

// conditions returns every condition found anywhere under status (the
// object's own, and those of its parts: manifests, compliancy details).
func conditions(u *unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if c, ok := v["conditions"].([]any); ok {
				for _, x := range c {
					if m, ok := x.(map[string]any); ok && m["type"] != nil {
						out = append(out, m)
					}
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(u.Object["status"])
	return out
}

// hasCondition asserts that some condition of u has type typ, status status
// and a message containing each of parts.
func hasCondition(c *assert.CollectT, u *unstructured.Unstructured, typ, status string, parts ...string) {
	all := conditions(u)
	for _, cond := range all {
		if cond["type"] != typ || cond["status"] != status {
			continue
		}
		msg, _ := cond["message"].(string)
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(msg, p)
		}
		if ok {
			return
		}
	}
	assert.Failf(c, "condition missing", "%s %s: no condition %s=%s with message containing %q; conditions: %s",
		u.GetKind(), key(u), typ, status, parts, brief(all))
}

// brief shows conditions with messages cut for a readable failure.
func brief(all []map[string]any) string {
	var b strings.Builder
	for _, c := range all {
		msg, _ := c["message"].(string)
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		fmt.Fprintf(&b, "\n  %v=%v %v: %s", c["type"], c["status"], c["reason"], msg)
	}
	return b.String()
}

// fieldIs asserts a string field of u.
func fieldIs(c *assert.CollectT, u *unstructured.Unstructured, want string, path ...string) {
	got, _, _ := unstructured.NestedString(u.Object, path...)
	assert.Equal(c, want, got, "%s %s %s", u.GetKind(), key(u), strings.Join(path, "."))
}

// eventually runs check until it passes within handledWithin.
func eventually(t *testing.T, check func(c *assert.CollectT), what string, args ...any) {
	t.Helper()
	require.EventuallyWithT(t, check, handledWithin, tick, append([]any{what}, args...)...)
}
