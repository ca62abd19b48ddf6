package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// `compliance verify` says the store is whole (exit 0), finds a head an
// earlier report carried, and names the first broken link of a store edited
// behind the hub's back (exit 2).
func TestComplianceVerify(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "compliance.db")
	s, err := history.OpenSQLite(ctx, db)
	require.NoError(t, err)
	t0 := time.Date(2026, 11, 20, 5, 46, 10, 0, time.UTC)
	ev := func(state compliance.State, at time.Duration) history.Event {
		return history.Event{Policy: "policies/p", Template: "ns", Cluster: "cluster2", State: state, Message: string(state) + "; x", Time: t0.Add(at)}
	}
	_, err = s.Record(ctx, ev(compliance.NonCompliant, 0), ev(compliance.Compliant, 300*time.Millisecond))
	require.NoError(t, err)
	earlier, err := s.Head(ctx)
	require.NoError(t, err)
	_, err = s.Record(ctx, ev(compliance.NonCompliant, time.Hour))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	out, errOut, code := runPolicyCLI(t, "compliance", "verify", "--compliance-db", db)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Chain:       whole")
	require.Contains(t, out, "Transitions: 3 in 1 series")
	out, errOut, code = runPolicyCLI(t, "compliance", "verify", "--compliance-db", db, "--head", earlier.Hash)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "found at event 2")
	out, errOut, code = runPolicyCLI(t, "compliance", "verify", "--compliance-db", db, "--head", earlier.Hash, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var found history.Verification
	require.NoError(t, json.Unmarshal([]byte(out), &found), "--head -o json prints JSON only: %s", out)
	require.Equal(t, int64(2), found.Found[earlier.Hash])
	out, code, err = runVerify(t, "--compliance-db", db, "--head", "00"+earlier.Hash[2:])
	require.Equal(t, 2, code, out)
	require.ErrorContains(t, err, "never passed through this head")

	raw, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE compliance_events SET state = 'Compliant', message = 'Compliant; x' WHERE seq = 3`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())
	out, code, err = runVerify(t, "--compliance-db", db, "-o", "json")
	require.Equal(t, 2, code, out)
	require.ErrorContains(t, err, "event 3")
	require.ErrorContains(t, err, "it was changed")
	var v history.Verification
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.Equal(t, 1, v.BrokenLinks)
	require.Equal(t, int64(3), v.Broken.Seq)
}

// runVerify runs `flotilla compliance verify args...` and returns its output,
// error and exit code.
func runVerify(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(append([]string{"compliance", "verify"}, args...))
	err := cmd.Execute()
	code := 0
	if err != nil {
		code = exitCode(err)
	}
	return out.String(), code, err
}
