package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/windows"
)

// Prepare readies cmd, made by exec.Command with its Dir and Env set, to be
// started on Windows:
//
//   - A program that exec.Command did not find (it looks with this
//     process's PATH, and refuses one found in the current directory), or
//     that has no extension or no absolute path yet, is looked for as the
//     child's environment would find it: its PATH and PATHEXT, relative
//     paths from cmd.Dir (lookPathWindows). So "npx" is npx.cmd, where
//     Node's spawn fails with ENOENT.
//   - A batch file (.cmd, .bat) runs through %SystemRoot%\System32\cmd.exe
//     (never %ComSpec%, which the environment could point anywhere), with
//     a command line quoted for cmd.exe's rules, and arguments it cannot
//     quote safely refused with an *UnsafeArgError (batchCommandLine).
//     os/exec would let Windows start the batch file with a command line
//     quoted for other programs, where an argument holding '&' runs a
//     command of its choosing.
//
// A cmd whose SysProcAttr.CmdLine is set is the caller's own quoting, and
// only its program is looked for.
func Prepare(cmd *exec.Cmd) error {
	name := cmd.Path
	if cmd.Err != nil && len(cmd.Args) > 0 {
		name = cmd.Args[0]
	}
	if cmd.Err != nil || !filepath.IsAbs(name) || !hasExtWindows(name) {
		env := cmd.Env
		if env == nil {
			env = os.Environ()
		}
		p, err := lookPathWindows(name, cmd.Dir, env, os.Stat)
		if err != nil {
			return err
		}
		cmd.Path, cmd.Err = filepath.Clean(p), nil
	}
	if !isBatch(cmd.Path) || cmd.SysProcAttr != nil && cmd.SysProcAttr.CmdLine != "" {
		return nil
	}
	cmdExe, err := systemCmdExe()
	if err != nil {
		return err
	}
	line, err := batchCommandLine(cmdExe, cmd.Path, cmd.Args[1:])
	if err != nil {
		return err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.Path, cmd.SysProcAttr.CmdLine = cmdExe, line
	return nil
}

// systemCmdExe is cmd.exe in the system directory.
var systemCmdExe = sync.OnceValues(func() (string, error) {
	dir, err := windows.GetSystemDirectory()
	if err != nil {
		return "", errors.New("finding cmd.exe to run a batch file: " + err.Error())
	}
	return filepath.Join(dir, "cmd.exe"), nil
})
