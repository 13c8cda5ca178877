package pgserver

import "github.com/zudojs/bank/scenarios/lab/procs"

// runAs is never an account on Windows: bank runs PostgreSQL as the user,
// but, as pg_ctl does, with a restricted token (procs.Spec.Restricted),
// since PostgreSQL refuses to run with administrative permissions.
type runAs struct{ name string }

func currentRunAs() (*runAs, error)            { return nil, nil }
func (r *runAs) spec(s procs.Spec) procs.Spec  { s.Restricted = true; return s }
func (r *runAs) give(string) error             { return nil }
func (r *runAs) copyDir(src, dst string) error { return copyTree(src, dst) }
func (r *runAs) String() string                { return "" }

func (r *runAs) reach(string) error { return nil }
