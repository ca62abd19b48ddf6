package conditions

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// MaxMessage is metav1.Condition's maxLength for message, in bytes.
	MaxMessage = 32768
	// TotalBudget bounds the messages of one status together, in bytes.
	TotalBudget = 512 * 1024
	// MinMessage is the least a message is cut to when the budget is shared.
	MinMessage = 1024
	// ReasonMessageTruncated is the reason of the Event that reports a cut.
	ReasonMessageTruncated = "MessageTruncated"
)

// marker ends a cut message. The checksum of the full text lets SameMessage
// tell two texts with the same beginning and length apart.
func marker(cut int, full string) string {
	return fmt.Sprintf(" ... [truncated: %d of %d bytes, text %08x; full text in the controller's log, see Event %s]",
		cut, len(full), checksum(full), ReasonMessageTruncated)
}

func checksum(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// FitMessage returns s unchanged when it has at most limit bytes; otherwise it
// returns s cut on a UTF-8 boundary and ended with a marker, at most limit
// bytes in all, and true.
func FitMessage(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	keep := limit - len(marker(len(s), s))
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	out := strings.ToValidUTF8(s[:keep], "") + marker(len(s)-keep, s)
	if len(out) > limit { // a limit shorter than the marker
		out = out[:limit]
		for len(out) > 0 && !utf8.ValidString(out) {
			out = out[:len(out)-1]
		}
	}
	return out, true
}

// Cut is one message FitStatus shortened.
type Cut struct {
	// Path is the JSON path of the field, e.g. status.conditions[0].message.
	Path string
	// Full is the message before it was cut.
	Full string
	// Limit is what it was cut to, in bytes.
	Limit int
}

// FitStatus cuts, in place, every string field named Message in obj's Status
// field (obj is a pointer to an API object) or, when obj has no Status field,
// in obj itself. Each message is cut to MaxMessage bytes, or less when the
// status holds so many messages that together they would pass TotalBudget. It
// returns what it cut, nil when everything fit.
func FitStatus(obj any) []Cut {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	root, path := v.Elem(), ""
	if root.Kind() == reflect.Struct {
		if st := root.FieldByName("Status"); st.IsValid() {
			root, path = st, "status"
		}
	}
	var fields []field
	collect(root, path, &fields)
	limit := MaxMessage
	if n := len(fields); n > 0 && n*MaxMessage > TotalBudget {
		limit = max(TotalBudget/n, MinMessage)
	}
	var cuts []Cut
	for _, f := range fields {
		full := f.v.String()
		if fitted, cut := FitMessage(full, limit); cut {
			f.v.SetString(fitted)
			cuts = append(cuts, Cut{Path: f.path, Full: full, Limit: limit})
		}
	}
	return cuts
}

type field struct {
	v    reflect.Value
	path string
}

func collect(v reflect.Value, path string, out *[]field) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			collect(v.Elem(), path, out)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // raw bytes (RawExtension, ...)
		}
		for i := 0; i < v.Len(); i++ {
			collect(v.Index(i), path+"["+strconv.Itoa(i)+"]", out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			fv := v.Field(i)
			p := join(path, jsonName(sf))
			if sf.Name == "Message" && fv.Kind() == reflect.String {
				if fv.CanSet() {
					*out = append(*out, field{v: fv, path: p})
				}
				continue
			}
			if sf.Anonymous {
				p = path
			}
			collect(fv, p, out)
		}
	}
}

func jsonName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		return sf.Name
	}
	return name
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// SameMessage tells whether stored (as written to a status) says the same as
// full: equal, or full cut by FitMessage to any limit. Code that keeps a
// transition time while the message is unchanged compares with it.
func SameMessage(stored, full string) bool {
	if stored == full {
		return true
	}
	i := strings.LastIndex(stored, " ... [truncated: ")
	if i < 0 {
		return false
	}
	var cut, total int
	var sum uint32
	if _, err := fmt.Sscanf(stored[i:], " ... [truncated: %d of %d bytes, text %08x", &cut, &total, &sum); err != nil {
		return false
	}
	return total == len(full) && i+cut == len(full) && sum == checksum(full) && strings.HasPrefix(full, stored[:i])
}
