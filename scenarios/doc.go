// Package scenarios is the lessons: each file tells one story of the
// lesson "Idempotency and safe retries" (or one mistake of its table) on a
// real PostgreSQL and ends with the checks that say it came out as taught;
// registry.go lists them in the lesson's order.
package scenarios
