package main

import "testing"

func TestHubGC(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		want   int
		wantOK bool
	}{
		{name: "nothing set: the hub's default", env: nil, want: hubGCPercent, wantOK: true},
		{name: "GOGC set: Go's reading stands", env: map[string]string{"GOGC": "200"}, wantOK: false},
		{name: "GOGC=off stands", env: map[string]string{"GOGC": "off"}, wantOK: false},
		{name: "GOMEMLIMIT set: Go's reading stands", env: map[string]string{"GOMEMLIMIT": "512MiB"}, wantOK: false},
		{name: "both set", env: map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}, wantOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := hubGC(func(k string) string { return tc.env[k] })
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Fatalf("hubGC = %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
