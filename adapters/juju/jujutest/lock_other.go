//go:build !unix

package jujutest

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// lockFile takes an exclusive lock on path by creating path+".lock", which
// must not exist, retrying for up to a minute; it returns the function that
// releases the lock by removing the file.
func lockFile(path string) (unlock func(), err error) {
	name := path + ".lock"
	deadline := time.Now().Add(time.Minute)
	for {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(name) }, nil
		}
		if !errors.Is(err, os.ErrExist) || time.Now().After(deadline) {
			return nil, fmt.Errorf("jujutest: locking model: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
