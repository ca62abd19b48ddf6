package work_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/klusterlet/work/apply"
)

// killer stands for the agent's process being killed after its first n
// writes about one work: the n-th write reaches its apiserver, every later
// one fails without being sent, and the agent is stopped. Writes are counted
// (in the order they start, on the hub and the managed cluster together) when
// their URL names the work, its record or its ConfigMap, which all share the
// work's name.
type killer struct {
	name   string
	n      int
	mu     sync.Mutex
	sent   int
	killed chan struct{}
	once   sync.Once
}

// about says req concerns the work: its path names it, or, for a create
// (sent to the collection), its body does.
func (k *killer) about(req *http.Request) bool {
	if strings.Contains(req.URL.Path, k.name) {
		return true
	}
	if req.Method != http.MethodPost || req.Body == nil {
		return false
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	return err == nil && bytes.Contains(body, []byte(`"`+k.name+`"`))
}

// firstPassDone is closed once the work is Applied, recorded and its
// ConfigMap adopted: everything a first pass writes.
func firstPassDone(ctx context.Context, spoke client.Client, name string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = kwait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
			w := &workv1.ManifestWork{}
			if hub.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: name}, w) != nil || !applied_(w) {
				return false, nil
			}
			amw, err := appliedWork(nil, spoke, name)
			return err == nil && len(amw.Status.AppliedResources) == 1, nil
		})
	}()
	return done
}

func (k *killer) kill() { k.once.Do(func() { close(k.killed) }) }

func (k *killer) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet || req.URL.Query().Get("dryRun") != "" || !k.about(req) {
				return rt.RoundTrip(req)
			}
			k.mu.Lock()
			allowed := k.sent < k.n
			if allowed {
				k.sent++
			}
			last := k.sent == k.n
			k.mu.Unlock()
			if !allowed {
				k.kill()
				return nil, errors.New("killed")
			}
			resp, err := rt.RoundTrip(req)
			if last {
				k.kill()
			}
			return resp, err
		})
	})
	return cfg
}

// TestKilledBetweenAnyTwoWrites: a new work that holds its finalizer from
// creation (as the hub's admission gives it) takes the agent's fast path: its
// record and its ConfigMap are written at once, the status follows, then the
// owner reference and the record's list. The agent is killed after each
// number of writes in turn, 0 to every write of a first pass; then
//   - with the work still there, a new agent brings it to Applied, with the
//     ConfigMap owned by the record, listed in it, and no pending mark left;
//   - with the work deleted while the agent was down, a new agent removes the
//     ConfigMap and the record and lets the work go.
func TestKilledBetweenAnyTwoWrites(t *testing.T) {
	ctx := context.Background()
	spoke2, spoke2c := spoke2Clients(t)
	const ns = "killed"
	_, err := spoke2.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// A first pass: the record, the ConfigMap, the status, the owner
	// reference, the record's list. One more: the kill comes after all of
	// them (when the first pass is through).
	const firstPassWrites = 5
	for n := 0; n <= firstPassWrites+1; n++ {
		for _, deleted := range []bool{false, true} {
			name := fmt.Sprintf("kill%d-kept", n)
			if deleted {
				name = fmt.Sprintf("kill%d-deleted", n)
			}
			t.Run(name, func(t *testing.T) {
				w := newWork(t, "cluster2", name, configMap(ns, name, map[string]interface{}{"k": "v"}))
				w.w.Finalizers = []string{workv1.ManifestWorkFinalizer}
				w.create(t)

				k := &killer{name: name, n: n, killed: make(chan struct{})}
				stop := startAgentOn(t, k.config(agentHubConfig(env.Hub.Config, "cluster2")), k.config(env.Clusters[1].Config), syncInterval)
				if n == 0 {
					k.kill()
				}
				select {
				case <-k.killed:
				case <-firstPassDone(ctx, spoke2c, name):
					k.kill()
				}
				stop()
				t.Logf("killed after %d of its writes", k.sent)
				if n == 2 {
					// The record and the ConfigMap were written at once: the
					// ConfigMap names its record, not yet its owner.
					cm, err := spoke2.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
					require.NoError(t, err)
					_, err = appliedWork(t, spoke2c, name)
					require.NoError(t, err, "the record was created with the ConfigMap")
					assert.Empty(t, cm.OwnerReferences)
					assert.NotEmpty(t, cm.Annotations[apply.PendingOwnerAnnotation])
					assert.True(t, strings.HasSuffix(cm.Annotations[apply.PendingOwnerAnnotation], "-"+name), "names the record")
				}

				if deleted {
					require.NoError(t, hub.Delete(ctx, getWork(t, "cluster2", name)))
				}
				startAgent(t)
				if deleted {
					require.Eventually(t, func() bool {
						return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: name}, &workv1.ManifestWork{}))
					}, wait, tick, "the work is let go")
					_, err := spoke2.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
					assert.True(t, apierrors.IsNotFound(err), "the ConfigMap is removed: %v", err)
					_, err = appliedWork(t, spoke2c, name)
					assert.True(t, apierrors.IsNotFound(err), "the record is removed: %v", err)
					return
				}
				waitApplied(t, "cluster2", name)
				amw := recordedWork(t, spoke2c, name, 1)
				require.Eventually(t, func() bool {
					cm, err := spoke2.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return false
					}
					_, pending := cm.Annotations[apply.PendingOwnerAnnotation]
					return len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == amw.UID && !pending
				}, wait, tick, "the ConfigMap is owned by the record, once, with no pending mark")
				assert.Equal(t, name, amw.Status.AppliedResources[0].Name)
				deleteWork(t, "cluster2", name)
				_, err := spoke2.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
				assert.True(t, apierrors.IsNotFound(err), "the ConfigMap goes with the work: %v", err)
			})
		}
	}
}
