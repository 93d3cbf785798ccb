package launcher

import (
	"errors"
	"io"
	"net"
)

// canPassStdio is false: Windows has no SCM_RIGHTS for a client to hand
// its stdin and stdout to the launcher, which answers that it does not
// take them.
const canPassStdio = false

// receiveStdio is never called on Windows: the launcher answers that it
// does not take stdio.
func receiveStdio(net.Conn) (io.ReadWriteCloser, error) {
	return nil, errors.New("handing stdio over a socket is not supported on Windows")
}
