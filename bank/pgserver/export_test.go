package pgserver

// Usage is usage, for the tests: the space the files below a directory take.
var Usage = usage
