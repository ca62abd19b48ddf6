package index_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to watch the locks
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/search/index"
)

// Two hub replicas sharing a PostgreSQL index, each taking a change of
// another resource of the same cluster (a compromised agent posts through the hub apiserver, which
// spreads its posts over the replicas): each change alone fits the limit,
// both together do not. The second waits for the first and is refused;
// without that each checks the usage without the other's uncommitted rows
// and both are written.
func TestReplicasDoNotRacePastTheLimit(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t).NewDatabase(t)
	replicas := make([]*index.Store, 2)
	for i := range replicas {
		s, err := index.Open(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		s.SetLimits(index.Limits{Objects: 1})
		replicas[i] = s
	}
	watch, err := sql.Open("pgx", url)
	require.NoError(t, err)
	t.Cleanup(func() { watch.Close() })

	checked, release := make(chan struct{}), make(chan struct{})
	index.SetBeforeCommit(replicas[0], func() { close(checked); <-release })
	errs := make([]error, 2)
	done := []chan struct{}{make(chan struct{}), make(chan struct{})}
	// Two resources: the changes of one meet on its search_resources row.
	apply := func(i int, res schema.GroupVersionResource, u *unstructured.Unstructured) {
		defer close(done[i])
		_, errs[i] = replicas[i].Apply(ctx, index.Change{Cluster: "east", Resource: res, Kind: u.GetKind(), Namespaced: true,
			Upserts: []*unstructured.Unstructured{u}})
	}
	go apply(0, pods, pod(t, "shop", "first", "first-uid", "1", "nginx:1.25", "Running", nil))
	<-checked
	go apply(1, deployments, obj(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {namespace: shop, name: second, uid: second-uid, resourceVersion: "1"}}`))
	// The second replica's change is written, or waits for the first's.
	assert.Eventually(t, func() bool {
		select {
		case <-done[1]:
			return true
		default:
		}
		var waiting int
		require.NoError(t, watch.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks WHERE NOT granted`).Scan(&waiting))
		return waiting > 0
	}, time.Minute, 10*time.Millisecond)
	close(release)
	<-done[0]
	<-done[1]
	require.NoError(t, errs[0], "the first change fits")
	require.ErrorIs(t, errs[1], index.ErrOverLimit, "the second is checked with the first's object")
	u, err := replicas[1].Usage(ctx, "east")
	require.NoError(t, err)
	assert.Equal(t, int64(1), u.Objects)
}
