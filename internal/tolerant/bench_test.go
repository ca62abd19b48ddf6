package tolerant_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/internal/tolerant"
)

// BenchmarkList compares listing 1000 Placements with and without the filter
// (the filter's cost is a second decode of each item).
func BenchmarkList(b *testing.B) {
	items := make([]string, 1000)
	for i := range items {
		items[i] = placement("ns", fmt.Sprintf("p%d", i), "1", "3")
	}
	body := `{"apiVersion":"cluster.open-cluster-management.io/v1beta1","kind":"PlacementList","metadata":{"resourceVersion":"9"},"items":[` +
		strings.Join(items, ",") + `]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	f, err := tolerant.New(tolerant.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	for name, cfg := range map[string]*rest.Config{"plain": {Host: srv.URL, QPS: -1}, "filtered": f.Wrap(&rest.Config{Host: srv.URL, QPS: -1})} {
		cs := clusterclient.NewForConfigOrDie(cfg)
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if _, err := cs.ClusterV1beta1().Placements("").List(context.Background(), metav1.ListOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
