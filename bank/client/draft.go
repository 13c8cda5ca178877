package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The draft: an intent saved, with its key, before its first attempt, so
// that a client that crashes or is killed resumes with the same key.

// Draft is one transfer intent, saved before its first attempt so that a
// client that crashes or is killed resumes with the same key.
type Draft struct {
	Key     string          `json:"key"`
	Server  string          `json:"server"`
	Token   string          `json:"token"`
	Body    json.RawMessage `json:"body"`
	SavedAt time.Time       `json:"savedAt"`
}

// ErrDamagedDraft is a draft file that is there but cannot be read as
// one: it is never overwritten, for the learner to look at.
var ErrDamagedDraft = errors.New("the draft file is damaged")

// LoadDraft reads the draft at path: nil, and no error, when there is
// none.
func LoadDraft(path string) (*Draft, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d Draft
	if err := json.Unmarshal(raw, &d); err != nil || d.Key == "" {
		return nil, fmt.Errorf("%w: %s: look at it, then delete it", ErrDamagedDraft, path)
	}
	// The body goes again as it went the first time: one line, not the
	// file's indented copy.
	var body bytes.Buffer
	if json.Compact(&body, d.Body) == nil {
		d.Body = body.Bytes()
	}
	return &d, nil
}

// Save writes the draft to path atomically: a crash leaves the old file or the
// new one, never half of one.
func (d *Draft) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(d, "", "  ")
	tmp, err := os.CreateTemp(filepath.Dir(path), ".draft-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(raw, '\n'))
	if err == nil {
		err = tmp.Sync() // on disk before its name says it is the draft
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// The rename itself is on disk only once the directory is.
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}
