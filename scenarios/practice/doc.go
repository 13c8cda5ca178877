// Package practice is what a learner does with the lessons: the exercises
// (the situation prepared on a fresh database, the learner's program or
// statement run against it, and its lines and rows checked) and the quiz's
// questions, whose answers are read from real runs of the scenarios.
package practice
