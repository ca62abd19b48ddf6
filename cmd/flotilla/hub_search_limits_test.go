package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/search/index"
)

func TestSearchLimits(t *testing.T) {
	for _, tc := range []struct {
		objects int64
		bytes   string
		want    index.Limits
		err     string
	}{
		{250000, "2Gi", index.DefaultLimits, ""},
		{0, "0", index.Limits{}, ""},
		{10, "512Mi", index.Limits{Objects: 10, Bytes: 512 << 20}, ""},
		{10, "1000", index.Limits{Objects: 10, Bytes: 1000}, ""},
		{-1, "1Gi", index.Limits{}, "--search-max-objects-per-cluster -1"},
		{10, "lots", index.Limits{}, `--search-max-bytes-per-cluster "lots"`},
		{10, "-1Gi", index.Limits{}, `--search-max-bytes-per-cluster "-1Gi"`},
		// A decimal quantity past int64 (9.2 EB) has the value 0, which
		// would be no limit at all; a fraction of a byte is no size either.
		{10, "1e19", index.Limits{}, `--search-max-bytes-per-cluster "1e19"`},
		{10, "0.5", index.Limits{}, `--search-max-bytes-per-cluster "0.5"`},
		{10, "7Ei", index.Limits{Objects: 10, Bytes: 7 << 60}, ""},
		{10, "1.5Gi", index.Limits{Objects: 10, Bytes: 3 << 29}, ""},
	} {
		got, err := searchLimits(tc.objects, tc.bytes)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
	// The flags' defaults are DefaultLimits.
	f := newHubCommand().Flags()
	o, _ := f.GetInt64("search-max-objects-per-cluster")
	b, _ := f.GetString("search-max-bytes-per-cluster")
	got, err := searchLimits(o, b)
	require.NoError(t, err)
	assert.Equal(t, index.DefaultLimits, got)
}
