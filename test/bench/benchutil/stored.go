package benchutil

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Stored is what an apiserver holds, per resource ("resource.group"): the
// objects and the bytes of their JSON, as a list returns them.
type Stored map[string]StoredResource

// StoredResource is one resource's objects and JSON bytes.
type StoredResource struct {
	Objects, Bytes int64
	// Largest and Smallest are the JSON of the resource's largest and
	// smallest objects.
	Largest, Smallest json.RawMessage
}

// ReadStored lists every listable resource of the apiserver at cfg (pages of
// 500, JSON) and tallies its objects and their bytes.
func ReadStored(ctx context.Context, cfg *rest.Config) (Stored, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover the apiserver's resources: %w", err)
	}
	rc := rest.CopyConfig(cfg)
	rc.AcceptContentTypes, rc.ContentType = "application/json", "application/json"
	rc.QPS, rc.Burst = 1000, 1000
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	s := Stored{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !contains(r.Verbs, "list") {
				continue
			}
			rcfg := rest.CopyConfig(rc)
			rcfg.GroupVersion = &gv
			rcfg.APIPath = "/apis"
			if gv.Group == "" {
				rcfg.APIPath = "/api"
			}
			rcfg.NegotiatedSerializer = clientscheme.Codecs.WithoutConversion()
			client, err := rest.RESTClientForConfigAndClient(rcfg, hc)
			if err != nil {
				return nil, err
			}
			key := r.Name
			if gv.Group != "" {
				key += "." + gv.Group
			}
			var tally StoredResource
			for cont := ""; ; {
				raw, err := client.Get().Resource(r.Name).Param("limit", "500").Param("continue", cont).DoRaw(ctx)
				if err != nil {
					return nil, fmt.Errorf("list %s: %w", key, err)
				}
				var page struct {
					Metadata struct {
						Continue string `json:"continue"`
					} `json:"metadata"`
					Items []json.RawMessage `json:"items"`
				}
				if err := json.Unmarshal(raw, &page); err != nil {
					return nil, fmt.Errorf("list %s: %w", key, err)
				}
				for _, it := range page.Items {
					tally.Objects++
					tally.Bytes += int64(len(it))
					if len(it) > len(tally.Largest) {
						tally.Largest = it
					}
					if tally.Smallest == nil || len(it) < len(tally.Smallest) {
						tally.Smallest = it
					}
				}
				if cont = page.Metadata.Continue; cont == "" {
					break
				}
			}
			s[key] = tally
		}
	}
	return s, nil
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// Minus is what s holds beyond base.
func (s Stored) Minus(base Stored) Stored {
	d := Stored{}
	for k, v := range s {
		b := base[k]
		d[k] = StoredResource{Objects: v.Objects - b.Objects, Bytes: v.Bytes - b.Bytes, Largest: v.Largest, Smallest: v.Smallest}
	}
	return d
}

// WriteLargest writes each resource's largest and smallest objects to dir,
// <resource>.json and <resource>.smallest.json.
func (s Stored) WriteLargest(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for k, v := range s {
		if len(v.Largest) == 0 {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, k+".json"), v.Largest, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, k+".smallest.json"), v.Smallest, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Total is the sum over every resource.
func (s Stored) Total() StoredResource {
	var t StoredResource
	for _, v := range s {
		t.Objects += v.Objects
		t.Bytes += v.Bytes
	}
	return t
}

// Table is s divided by n (clusters), one line per resource with any object,
// the most bytes first, and a total line; capacity holds the apiserver's
// watch cache capacities by resource, shown when known.
func (s Stored) Table(n int, capacity map[string]float64) string {
	keys := make([]string, 0, len(s))
	var total StoredResource
	for k, v := range s {
		if v.Objects == 0 && v.Bytes == 0 {
			continue
		}
		keys = append(keys, k)
		total.Objects += v.Objects
		total.Bytes += v.Bytes
	}
	sort.Slice(keys, func(i, j int) bool {
		if s[keys[i]].Bytes != s[keys[j]].Bytes {
			return s[keys[i]].Bytes > s[keys[j]].Bytes
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%-48s %10s %12s %10s %12s %10s\n", "resource", "objects", "bytes", "obj/cl", "bytes/cl", "wcache")
	line := func(k string, v StoredResource, wc string) {
		fmt.Fprintf(&b, "%-48s %10d %12d %10.2f %12.0f %10s\n", k, v.Objects, v.Bytes, float64(v.Objects)/float64(n), float64(v.Bytes)/float64(n), wc)
	}
	for _, k := range keys {
		wc := "-"
		if c, ok := capacity[k]; ok {
			wc = strconv.FormatFloat(c, 'f', 0, 64)
		}
		line(k, s[k], wc)
	}
	line("total", total, "")
	return b.String()
}

// PlainMetrics reads the apiserver's /metrics and returns the named metrics
// that carry no labels.
func PlainMetrics(ctx context.Context, cfg *rest.Config, names ...string) (map[string]float64, error) {
	body, err := getMetrics(ctx, cfg)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || !want[name] {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out, nil
}

// RawMetrics is the apiserver's /metrics.
func RawMetrics(ctx context.Context, cfg *rest.Config) ([]byte, error) { return getMetrics(ctx, cfg) }

func getMetrics(ctx context.Context, cfg *rest.Config) ([]byte, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// ResourceMetric reads the apiserver's /metrics and returns the samples of
// the named metric by resource ("resource.group", from its resource and group
// labels; summed when several share it).
func ResourceMetric(ctx context.Context, cfg *rest.Config, metric string) (map[string]float64, error) {
	body, err := getMetrics(ctx, cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	prefix := metric + "{"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		labels := line[len(prefix):strings.LastIndexByte(line[:sp], '}')]
		key := labelValue(labels, "resource")
		if g := labelValue(labels, "group"); g != "" && !strings.Contains(key, ".") {
			key += "." + g
		}
		out[key] += v
	}
	return out, sc.Err()
}

func labelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
