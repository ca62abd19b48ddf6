package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// Paths the handler serves.
const (
	PagePath = "/compliance"
	APIPath  = "/api/compliance"
)

// Options configures the handler. Every field documents its default.
type Options struct {
	// Reader lists the hub's policies (the hub's cache). Required.
	Reader client.Reader
	// Auth authenticates and authorises callers. Required.
	Auth Authorizer
	// History adds trends and changes. Default nil: the report alone.
	History history.Store
	// Window is the default history window (?since overrides it). Default 30 days.
	Window time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Handler serves PagePath and APIPath.
type Handler struct{ o Options }

// New returns the handler.
func New(o Options) (*Handler, error) {
	if o.Reader == nil || o.Auth == nil {
		return nil, fmt.Errorf("compliance web: Options.Reader and Options.Auth are required")
	}
	if o.Window <= 0 {
		o.Window = 30 * 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Handler{o: o}, nil
}

// Document is the JSON served at APIPath: the report (schema
// compliance.flotilla.dev/v1) with the history of the window when the hub
// records one.
type Document = document.Document

// contentSecurity forbids everything but the page's inline styles: the page
// has no script and loads nothing.
const contentSecurity = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.URL.Path {
	case LoginPath:
		h.login(w, req)
		return
	case LogoutPath:
		h.logout(w, req)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	token, ok := bearer(req)
	if !ok {
		if req.URL.Path == PagePath {
			loginPage(w, http.StatusUnauthorized, "")
			return
		}
		unauthorized(w, "no bearer token: send Authorization: Bearer <token> (a token the hub apiserver accepts)")
		return
	}
	ctx := req.Context()
	user, err := h.o.Auth.Authenticate(ctx, token)
	if err != nil {
		http.Error(w, "cannot check the token with the hub apiserver: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if user == nil {
		if req.URL.Path == PagePath {
			loginPage(w, http.StatusUnauthorized, "The hub apiserver does not accept this token.")
			return
		}
		unauthorized(w, "the hub apiserver does not accept this token")
		return
	}
	doc, status, err := h.document(req, user)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	var buf bytes.Buffer
	if req.URL.Path == APIPath {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
	} else {
		var page bytes.Buffer
		if err := document.WriteHTML(&page, doc); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, fromCookie := cookieToken(req)
		withViewer(&buf, page.Bytes(), user, fromCookie && req.Header.Get("Authorization") == "")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", contentSecurity)
		w.Header().Set("X-Frame-Options", "DENY")
	}
	_, _ = w.Write(buf.Bytes())
}

func (h *Handler) document(req *http.Request, user *User) (*Document, int, error) {
	ctx := req.Context()
	now := h.o.Now()
	vals, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("query: %w", err)
	}
	o, err := document.ParseQuery(vals, now, h.o.Window)
	if err == nil {
		err = document.CheckServedWindow(o.Since, now)
	}
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	in, err := compliance.Read(ctx, h.o.Reader)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	in.Now = now
	readable, err := document.Readable(ctx, in, func(ctx context.Context, ns string) (bool, error) { return h.o.Auth.CanList(ctx, user, ns) })
	if err != nil {
		return nil, http.StatusServiceUnavailable, err
	}
	doc, err := document.Build(ctx, document.Source{Input: in, History: h.o.History, Readable: readable}, o)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	return doc, http.StatusOK, nil
}

// bearer reads the token from the Authorization header, else from the
// cookie the login form sets.
func bearer(req *http.Request) (string, bool) {
	if h := req.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		token = strings.TrimSpace(token)
		return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
	}
	return cookieToken(req)
}

// cookieToken is the token the login form keeps in its cookie.
func cookieToken(req *http.Request) (string, bool) {
	if c, err := req.Cookie(tokenCookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

// withViewer writes the page with, at the top of its body, who it is shown
// to (the identity the hub apiserver gave the token) and, when the browser
// signed in with the form, a sign-out button.
func withViewer(w *bytes.Buffer, page []byte, u *User, signOut bool) {
	bar := `<div class="viewer" style="font:13px system-ui,sans-serif;text-align:right;padding:.3rem 1rem;border-bottom:1px solid #ddd">Signed in as <b>` +
		html.EscapeString(u.Name) + `</b>`
	if signOut {
		bar += ` <form method="post" action="` + LogoutPath + `" style="display:inline;margin-left:.5rem"><button type="submit">Sign out</button></form>`
	}
	bar += "</div>\n"
	at := bytes.Index(page, []byte("<body"))
	if at >= 0 {
		if end := bytes.IndexByte(page[at:], '>'); end >= 0 {
			at += end + 1
		} else {
			at = -1
		}
	}
	if at < 0 {
		at = 0
	}
	w.Write(page[:at])
	w.WriteString(bar)
	w.Write(page[at:])
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="flotilla-hub"`)
	http.Error(w, msg, http.StatusUnauthorized)
}
