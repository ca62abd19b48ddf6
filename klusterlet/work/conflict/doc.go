// Package conflict decides what the work agent does when two ManifestWorks
// carry the same object: identical content is shared (both works own it), and
// different content is a conflict in which the work that managed the object
// first keeps it and the other one leaves it alone. The decision is pure (it
// reads the live object and the AppliedManifestWorks that own it); Registry
// remembers what each work of this agent asks for, so the work that keeps an
// object can report the conflict too.
//
// Who keeps an object is read from the object itself (its first owner
// reference to a live AppliedManifestWork), so the answer survives agent
// restarts; Decide is pure and table-tested, Registry is a mutex-guarded map.
package conflict
