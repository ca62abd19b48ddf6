// Package compliance turns governance policies into a compliance report by
// standard, family and control (the policies' policy.open-cluster-management.io
// standards, categories and controls annotations), with a state per control and
// cluster and the violating policies' latest messages.
//
// The model is built by one pure function, Build, from root policies and their
// replicas; each output format (table, CSV, JSON, HTML) is a renderer over the
// resulting Report in its own file. Reading the hub lives in Load.
package compliance
