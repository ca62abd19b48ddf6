package tolerant_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/internal/tolerant"
)

func placement(ns, name, rv, n string) string {
	return fmt.Sprintf(`{"apiVersion":"cluster.open-cluster-management.io/v1beta1","kind":"Placement",`+
		`"metadata":{"name":%q,"namespace":%q,"uid":"u-%s","resourceVersion":%q},"spec":{"numberOfClusters":%s}}`, name, ns, name, rv, n)
}

// server answers Placement lists and watches with the given bodies.
func server(t *testing.T, list string, events []string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			for _, e := range events {
				fmt.Fprintln(w, e)
				w.(http.Flusher).Flush()
			}
			return
		}
		fmt.Fprint(w, list)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, args)
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func newFilter(t *testing.T) (*tolerant.Filter, *logLines, *[]tolerant.Dropped) {
	logs := &logLines{}
	f, err := tolerant.New(tolerant.Options{Scheme: scheme.New(), Log: funcr.New(logs.add, funcr.Options{})})
	require.NoError(t, err)
	var reported []tolerant.Dropped
	var mu sync.Mutex
	f.SetReporter(func(d tolerant.Dropped) { mu.Lock(); reported = append(reported, d); mu.Unlock() })
	return f, logs, &reported
}

func TestListDropsUndecodableItemsAndReportsOnce(t *testing.T) {
	list := `{"apiVersion":"cluster.open-cluster-management.io/v1beta1","kind":"PlacementList","metadata":{"resourceVersion":"9"},"items":[` +
		placement("a", "good", "5", "1") + "," + placement("b", "bad", "6", "2147483648") + "," + placement("c", "good2", "7", "3") + `]}`
	srv := server(t, list, nil)
	ctx := context.Background()

	// Without the filter the whole list fails: the defect.
	plain := clusterclient.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	_, err := plain.ClusterV1beta1().Placements("").List(ctx, metav1.ListOptions{})
	require.ErrorContains(t, err, "cannot unmarshal number 2147483648")

	f, logs, reported := newFilter(t)
	cs := clusterclient.NewForConfigOrDie(f.Wrap(&rest.Config{Host: srv.URL}))
	for range 3 {
		got, err := cs.ClusterV1beta1().Placements("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var names []string
		for _, p := range got.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		assert.Equal(t, []string{"a/good", "c/good2"}, names)
		assert.Equal(t, "9", got.ResourceVersion)
	}
	lines := logs.get()
	require.Len(t, lines, 1, "one log line however often the list is read")
	assert.Contains(t, lines[0], `"namespace"="b"`)
	assert.Contains(t, lines[0], `"name"="bad"`)
	assert.Contains(t, lines[0], "2147483648")
	require.Len(t, *reported, 1)
	assert.Equal(t, "Placement b/bad", (*reported)[0].String())
	assert.Equal(t, "u-bad", (*reported)[0].UID)
}

func TestWatchTurnsUndecodableObjectsIntoDeletes(t *testing.T) {
	ev := func(typ, obj string) string { return fmt.Sprintf(`{"type":%q,"object":%s}`, typ, obj) }
	bookmark := `{"type":"BOOKMARK","object":{"apiVersion":"cluster.open-cluster-management.io/v1beta1","kind":"Placement","metadata":{"resourceVersion":"20"}}}`
	srv := server(t, "", []string{
		ev("ADDED", placement("a", "good", "10", "1")),
		ev("ADDED", placement("b", "bad", "11", "2147483648")),     // never seen: dropped
		ev("MODIFIED", placement("a", "good", "12", "4294967296")), // went bad: gone from caches
		ev("MODIFIED", placement("a", "good", "13", "2")),          // fixed: back
		bookmark,
	})
	f, logs, _ := newFilter(t)
	cs := clusterclient.NewForConfigOrDie(f.Wrap(&rest.Config{Host: srv.URL}))
	w, err := cs.ClusterV1beta1().Placements("").Watch(context.Background(), metav1.ListOptions{AllowWatchBookmarks: true})
	require.NoError(t, err)
	defer w.Stop()
	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < 4 {
		select {
		case e, ok := <-w.ResultChan():
			require.True(t, ok, "watch ended early after %v", got)
			require.NotEqual(t, watch.Error, e.Type, "%v", e.Object)
			p := e.Object.(*clusterv1beta1.Placement)
			got = append(got, fmt.Sprintf("%s %s/%s %s", e.Type, p.Namespace, p.Name, p.ResourceVersion))
		case <-timeout:
			t.Fatalf("events so far: %v", got)
		}
	}
	assert.Equal(t, []string{"ADDED a/good 10", "DELETED a/good 12", "MODIFIED a/good 13", "BOOKMARK / 20"}, got)
	assert.Len(t, logs.get(), 2)
}

func TestOtherResponsesPassUnchanged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, placement("b", "bad", "6", "2147483648"))
	}))
	defer srv.Close()
	f, logs, _ := newFilter(t)
	cs := clusterclient.NewForConfigOrDie(f.Wrap(&rest.Config{Host: srv.URL}))
	_, err := cs.ClusterV1beta1().Placements("b").Get(context.Background(), "bad", metav1.GetOptions{})
	require.Error(t, err, "a GET by name still reports the decode error, for that object only")
	assert.True(t, strings.Contains(err.Error(), "2147483648"), err.Error())
	assert.Empty(t, logs.get())
}
