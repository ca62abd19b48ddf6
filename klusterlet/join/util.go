package join

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
)

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func isX509(err error) bool { return strings.Contains(err.Error(), "x509: ") }

func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }
