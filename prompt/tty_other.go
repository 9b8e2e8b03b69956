//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package prompt

import (
	"fmt"
	"os"
	"runtime"
)

func openTTY(*os.File) (device, error) {
	return nil, fmt.Errorf("%w: the operator prompt is not supported on %s", ErrNoTerminal, runtime.GOOS)
}
