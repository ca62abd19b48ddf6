// Package workrules holds the well-known status rules of ManifestWork
// (condition rules of type WellKnownConditions): the built-in CEL rule per
// group-kind and condition type, OCM's (Job and Pod Complete) and Flotilla's
// own (Deployment Progressing and Degraded, Job Degraded).
//
// Design: both sides of the wire read the one table. The klusterlet's work
// agent evaluates a WellKnownConditions rule with WellKnown
// (klusterlet/work/rules); the hub's work operations ask WellKnownFor which
// conditions to request for a manifest (hub/work/ops). So the table lives on
// the ground floor, imports nothing of Flotilla, and neither side imports the
// other (docs/structure.md). Pure: no client, no clock.
package workrules
