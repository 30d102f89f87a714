// Package budget holds the arithmetic of retries and reclaims: how budgets
// frozen in a build's meta override a worker's own values, how many units may
// enter retry under the requeue tolerance, and whether a requeue or a reclaim
// still fits its budget or must finalize the unit as failed.
//
// The package is pure: no Redis client, no clock. The queue package reads the
// numbers, asks here, and writes the outcome.
package budget
