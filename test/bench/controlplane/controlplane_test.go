// Package controlplane_test measures what every integration test and
// `flotilla dev up` pays: starting a real control plane.
package controlplane_test

import (
	"context"
	"testing"
	"time"

	"flotilla.dev/flotilla/internal/controlplane"
	"flotilla.dev/flotilla/manifests"
	"flotilla.dev/flotilla/test/testenv"
)

// BenchmarkStart is one control plane (etcd + kube-apiserver +
// kube-controller-manager) from nothing to ready, then with the hub CRDs installed.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		start := time.Now()
		cp, err := controlplane.Start(context.Background(), controlplane.Config{Name: "bench", Dir: dir, FastEtcd: true})
		if err != nil {
			b.Fatal(err)
		}
		ready := time.Since(start)
		if err := manifests.InstallCRDs(context.Background(), cp.Config, manifests.HubCRDs); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(ready.Seconds(), "s-ready")
		b.ReportMetric(time.Since(start).Seconds(), "s-ready+crds")
		if err := cp.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvironment is a hub and two managed clusters, started in parallel
// with their CRDs, as test/testenv does.
func BenchmarkEnvironment(b *testing.B) {
	for b.Loop() {
		start := time.Now()
		env, err := testenv.New(testenv.Options{Clusters: 2})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-hub+2clusters")
		if err := env.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}
