// Package compare is the pure core of the ConfigurationPolicy engine: it
// compares an object template with a live object and computes the object
// enforce would write, with Open Cluster Management's semantics:
//
//   - maps are a subset match: keys the template does not name are ignored
//     (MustHave) or must be absent (MustOnlyHave);
//   - lists are matched order-insensitively, as a multiset: a template item
//     counts once, so duplicates must be present as often as the template
//     lists them. MustHave keeps extra live items; a template map item that
//     finds no match but shares its `name` with a live item is merged into it;
//     anything else is appended. MustOnlyHave takes the template's list as is;
//   - quantities compare as quantities ("1Gi" equals "1024Mi", 1 equals "1")
//     when one side has a unit or is a JSON number; two plain numeric strings
//     ("1.0", "1") compare as strings; numbers compare as numbers;
//   - an empty value (null, "", {}, []) equals a missing one;
//   - in metadata only labels and annotations count, compared with the
//     metadata compliance type;
//   - a status mismatch is a violation, but the merged object keeps the live
//     status: status is never enforced;
//   - a Secret's stringData is compared with its base64-decoded data.
//
// Nothing here talks to an apiserver; every rule has a table test.
package compare
