package apigroup

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"

	"flotilla.dev/flotilla/search/index"
)

// UI is the search page's resource: GET /apis/search.flotilla.dev/v1alpha1/ui
// answers an HTML page, reached through the hub apiserver as the user, most
// simply with `kubectl proxy` (http://127.0.0.1:8001/apis/search.flotilla.dev/v1alpha1/ui).
// The page is a form and a table: it runs no script and loads nothing.
const (
	UI     = "ui"
	UIPath = "/apis/" + Group + "/" + Version + "/" + UI
)

//go:embed ui.html.tmpl
var uiSource string

//go:embed ui.css
var uiStyle string

var (
	uiTemplate = template.Must(template.New("ui").Parse(uiSource))
	// uiCSP allows the page's own style sheet (by its hash) and nothing
	// else: no script, no image, no frame, forms to itself only.
	uiCSP = func() string {
		sum := sha256.Sum256([]byte(uiStyle))
		return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	}()
)

// uiPage is what the template shows.
type uiPage struct {
	Style     template.CSS
	User      string
	Resources []string
	Resource  string
	Form      map[string]string
	Error     string
	Columns   []string
	Rows      [][]string
	Count     int
	More      string // the next page's query, "" on the last
	Took      string
}

// uiFields are the form's text fields, the search's parameters.
var uiFields = []string{"cluster", "clusterSelector", "namespace", "labelSelector", "fieldSelector", "image", "namePrefix", "reason", "ready"}

func (h *handlers) ui(w http.ResponseWriter, req *http.Request, u user.Info) {
	if strings.TrimSuffix(req.URL.Path, "/") != UIPath {
		http.NotFound(w, req)
		return
	}
	start := time.Now()
	q := req.URL.Query()
	p := uiPage{Style: template.CSS(uiStyle), User: u.GetName(), Form: map[string]string{}, Resource: q.Get("resource")}
	for _, f := range uiFields {
		p.Form[f] = q.Get(f)
	}
	code := http.StatusOK
	if err := h.uiSearch(req.Context(), u, q, &p); err != nil {
		// A query's own mistake is shown on the page with the form, which
		// is the answer asked for (200); the index or the reviews failing
		// is not (503).
		p.Error = err.Error()
		if code = errorCode(err); code == http.StatusBadRequest {
			code = http.StatusOK
		}
	}
	p.Took = time.Since(start).Round(time.Millisecond).String()
	var b bytes.Buffer
	if err := uiTemplate.Execute(&b, p); err != nil {
		http.Error(w, "render the search page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", uiCSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// uiSearch fills p from the page's query: the resource picked, then the
// same search as a list's.
func (h *handlers) uiSearch(ctx context.Context, u user.Info, q url.Values, p *uiPage) error {
	known, err := h.visibleResources(ctx, u)
	if err != nil {
		return err
	}
	var res index.Resource
	for _, r := range known {
		name := r.GroupResource().String()
		p.Resources = append(p.Resources, name)
		if name == p.Resource || (p.Resource == "" && name == "pods") {
			res = r
		}
	}
	if p.Resource == "" {
		p.Resource = "pods"
	}
	if res.Resource == "" {
		if len(known) == 0 {
			return nil // nothing synced yet: the page says so
		}
		return fmt.Errorf("%w: no cluster you may see syncs %q", index.ErrBadQuery, p.Resource)
	}
	params := url.Values{}
	for _, f := range uiFields {
		if v := strings.TrimSpace(q.Get(f)); v != "" && f != "namespace" {
			params.Set(f, v)
		}
	}
	for _, k := range []string{"continue", "limit"} {
		if v := q.Get(k); v != "" {
			params.Set(k, v)
		}
	}
	if params.Get("limit") == "" {
		params.Set("limit", "200")
	}
	s, err := parseQuery(params)
	if err != nil {
		return err
	}
	s.Resource = res.GroupResource()
	if ns := strings.TrimSpace(q.Get("namespace")); ns != "" {
		if !res.Namespaced {
			return fmt.Errorf("%w: %s is cluster-scoped: search it without a namespace", index.ErrBadQuery, res.Resource)
		}
		s.Namespaces = []string{ns}
	}
	page, err := h.search(ctx, u, &s)
	if err != nil {
		return err
	}
	t := table(res, page, false, h.o.Now())
	for i, c := range t.ColumnDefinitions {
		p.Columns = append(p.Columns, strings.ToUpper(c.Name))
		if i == 0 && res.Namespaced {
			p.Columns = append(p.Columns, "NAMESPACE")
		}
	}
	for i, r := range t.Rows {
		var row []string
		for j, c := range r.Cells {
			row = append(row, fmt.Sprint(c))
			if j == 0 && res.Namespaced {
				row = append(row, page.Items[i].Object.GetNamespace())
			}
		}
		p.Rows = append(p.Rows, row)
	}
	p.Count = len(p.Rows)
	if page.Continue != "" {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("continue", page.Continue)
		p.More = next.Encode()
	}
	return nil
}
