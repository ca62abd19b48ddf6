// Package nist ships the NIST SP 800-53 rev5 catalog's control IDs, titles and
// families and the Low, Moderate, High and Privacy baseline selections, as data
// derived from NIST's public OSCAL content (github.com/usnistgov/oscal-content,
// public domain) by hack/nistgen and embedded from catalog.json, whose
// "source" records the commit and versions it was derived from.
//
// The compliance report uses it for official control titles and for coverage
// against a baseline (built-in, or a user's OSCAL profile read by
// ParseProfile).
package nist
