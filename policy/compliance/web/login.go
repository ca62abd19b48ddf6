package web

import (
	"html/template"
	"net/http"
	"strings"
	"time"
)

// LoginPath takes a token from the login form (POST) and keeps it in an
// HttpOnly, Secure, SameSite=Strict cookie for an hour, so a browser can open
// the page without sending a header.
const LoginPath = "/compliance/login"

// LogoutPath forgets the token (POST): the cookie is cleared.
const LogoutPath = "/compliance/logout"

const tokenCookie = "flotilla-compliance-token"

// sameOrigin refuses a cross-site POST to the sign-in and sign-out forms
// (login CSRF: a page elsewhere signing the browser in as the attacker, or
// out): a browser's Sec-Fetch-Site must say same-origin (or that the user
// typed it), else its Origin must be this host. Clients that send neither
// (curl, scripts) are not browsers and carry no ambient credential.
var sameOrigin = http.NewCrossOriginProtection()

// sameSitePost reports whether req is a POST from the page's own site; it
// answers 405 to another method and 403 to a cross-site POST.
func sameSitePost(w http.ResponseWriter, req *http.Request) bool {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return false
	}
	if err := sameOrigin.Check(req); err != nil {
		http.Error(w, "cross-site request refused: sign in from the report's own page ("+err.Error()+")", http.StatusForbidden)
		return false
	}
	return true
}

// tokenCookieOf is the cookie holding token for maxAge seconds (-1: clear it).
func tokenCookieOf(token string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: tokenCookie, Value: token, Path: "/", MaxAge: maxAge, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode}
}

var loginTemplate = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Compliance report: sign in</title>
<style>body{font:15px/1.4 system-ui,sans-serif;max-width:30rem;margin:2rem auto;padding:0 1rem}input{width:100%;box-sizing:border-box;padding:.4rem;font:inherit}button{margin-top:.5rem;padding:.4rem 1rem;font:inherit}.err{color:#c62828}</style>
</head><body>
<h1>Compliance report</h1>
{{with .}}<p class="err">{{.}}</p>{{end}}
<p>Sign in with a bearer token the hub apiserver accepts (for example a ServiceAccount token). You see the policies of the namespaces you may list.</p>
<form method="post" action="/compliance/login"><label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="off" required>
<button type="submit">Open the report</button></form>
</body></html>
`))

func loginPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", contentSecurity)
	w.Header().Set("WWW-Authenticate", `Bearer realm="flotilla-hub"`)
	w.WriteHeader(status)
	_ = loginTemplate.Execute(w, msg)
}

func (h *Handler) login(w http.ResponseWriter, req *http.Request) {
	if !sameSitePost(w, req) {
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, 16<<10)
	token := strings.TrimSpace(req.PostFormValue("token"))
	if token == "" {
		loginPage(w, http.StatusUnauthorized, "No token given.")
		return
	}
	user, err := h.o.Auth.Authenticate(req.Context(), token)
	if err != nil {
		loginPage(w, http.StatusServiceUnavailable, "Cannot check the token with the hub apiserver: "+err.Error())
		return
	}
	if user == nil {
		loginPage(w, http.StatusUnauthorized, "The hub apiserver does not accept this token.")
		return
	}
	http.SetCookie(w, tokenCookieOf(token, int(time.Hour/time.Second)))
	http.Redirect(w, req, PagePath, http.StatusSeeOther)
}

// logout clears the token cookie and goes back to the sign-in form.
func (h *Handler) logout(w http.ResponseWriter, req *http.Request) {
	if !sameSitePost(w, req) {
		return
	}
	http.SetCookie(w, tokenCookieOf("", -1))
	http.Redirect(w, req, PagePath, http.StatusSeeOther)
}
