package controlplane

import (
	"fmt"
	"os"
	"regexp"
)

// EnvAPIServerGoMemLimit, when set, is passed to the kube-apiservers this
// program starts as their GOMEMLIMIT (the Go runtime's soft memory limit: the
// collector runs more often as the process nears it, instead of letting the
// heap grow to twice what is live). A size as the Go runtime reads it:
// "2GiB", "1536MiB", or bytes. Unset: the runtime's default (no limit), as a
// stock kube-apiserver runs. For benchmarks that measure what a limit costs
// and saves (docs/benchmarks.md).
const EnvAPIServerGoMemLimit = "FLOTILLA_APISERVER_GOMEMLIMIT"

// memLimitSyntax is what the Go runtime accepts for GOMEMLIMIT (a
// non-negative integer with an optional binary unit), or "off".
var memLimitSyntax = regexp.MustCompile(`^(off|[0-9]+(B|KiB|MiB|GiB|TiB)?)$`)

// apiServerEnv is the environment a kube-apiserver starts with beyond this
// program's own: GOMEMLIMIT from EnvAPIServerGoMemLimit, checked here (the
// runtime would refuse it only once the apiserver starts, in its log).
func apiServerEnv() ([]string, error) {
	return memLimitEnv(os.Getenv(EnvAPIServerGoMemLimit))
}

func memLimitEnv(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	if !memLimitSyntax.MatchString(v) {
		return nil, fmt.Errorf("%s=%q: not a memory size like 2GiB, 1536MiB or a number of bytes (or off)", EnvAPIServerGoMemLimit, v)
	}
	return []string{"GOMEMLIMIT=" + v}, nil
}
