package main

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
)

// TODO(integrator): connect calibrate.Run (package calibrate, helper E2) here
// and store its result in r.res.Calibration. Until then --calibrate fails
// before any server starts work.
func (r *runner) calibrate(context.Context, backends.Backend) error {
	return errors.New("--calibrate: package calibrate is not part of this build yet")
}
