// Package rules evaluates a manifest's spec.manifestConfigs[].conditionRules
// against its live object and returns the conditions they produce, as OCM's
// work agent does: type CEL (expressions over the variable `object`, ANDed,
// with an optional message or messageExpression over `object` and `result`)
// and type WellKnownConditions (built-in rules per kind, the table in internal/workrules).
//
// Every condition a rule produces has a reason starting with "ConditionRule"
// (ConditionRuleEvaluated, ConditionRuleExpressionError,
// ConditionRuleInvalid, ConditionRuleInternalError), which is how the status
// code tells them apart from the agent's own conditions. Aggregate combines
// them into work-level conditions (reason ConditionRulesAggregated).
//
// Everything here is pure: no client, no clock.
package rules
