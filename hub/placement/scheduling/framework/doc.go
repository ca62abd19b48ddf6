// Package framework is the placement scheduler's plugin contract: the snapshot a
// scheduling pass reads, the per-cluster view plugins see, and the three plugin
// kinds (selectors, filters, prioritizers). It holds no logic beyond small helpers;
// plugins live in ../plugins/<name>, the scheduling loop in package scheduling.
package framework
