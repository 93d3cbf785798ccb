package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// winJobs is jobAPI on Windows.
type winJobs struct{}

// cpuRateControl is JOBOBJECT_CPU_RATE_CONTROL_INFORMATION with CpuRate,
// which x/sys does not define.
type cpuRateControl struct {
	ControlFlags uint32
	CpuRate      uint32 // in hundredths of a percent of all the machine's CPUs
}

const (
	jobCPURateControlEnable  = 0x1
	jobCPURateControlHardCap = 0x4
)

func (winJobs) create(lim Limits) (jobHandle, error) {
	job, err := windows.CreateJobObject(nil, nil) // not inheritable: no child can keep it alive
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if lim.MemoryMax > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(lim.MemoryMax)
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("kill on close: %w", err)
	}
	if lim.CPUMax > 0 {
		rate := cpuRateControl{
			ControlFlags: jobCPURateControlEnable | jobCPURateControlHardCap,
			CpuRate:      uint32(min(max(lim.CPUMax/float64(runtime.NumCPU())*10000, 1), 10000)),
		}
		if _, err := windows.SetInformationJobObject(job, windows.JobObjectCpuRateControlInformation,
			uintptr(unsafe.Pointer(&rate)), uint32(unsafe.Sizeof(rate))); err != nil {
			windows.CloseHandle(job)
			return 0, fmt.Errorf("cpu_max: %w", err)
		}
	}
	return jobHandle(job), nil
}

// startSuspended starts cmd with CREATE_SUSPENDED. A child none of whose
// stdio is a console gets none of its own either (CREATE_NO_WINDOW): a
// launcher without a console (started by connect) would otherwise make
// the system open a console window for each server, and a launcher's
// terminal keeps its Ctrl-C to itself, as a process group does on Unix. A
// child that inherits a console (serve's, in a terminal), or is attached,
// shares it.
func (winJobs) startSuspended(cmd *exec.Cmd, attached bool) error {
	if err := Prepare(cmd); err != nil {
		return err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	if !attached && !usesConsole(cmd) {
		cmd.SysProcAttr.CreationFlags |= windows.CREATE_NO_WINDOW
	}
	return cmd.Start()
}

// usesConsole reports whether any of cmd's stdio is a console.
func usesConsole(cmd *exec.Cmd) bool {
	for _, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		f, ok := s.(*os.File)
		if !ok {
			continue
		}
		var mode uint32
		if windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil {
			return true
		}
	}
	return false
}

// openProcess opens cmd's process. Its pid cannot name another process
// meanwhile: os.Process holds a handle to it, which keeps the pid taken
// until cmd has been waited for.
func openProcess(cmd *exec.Cmd, access uint32) (windows.Handle, error) {
	return windows.OpenProcess(access, false, uint32(cmd.Process.Pid))
}

func (winJobs) assign(job jobHandle, cmd *exec.Cmd) error {
	h, err := openProcess(cmd, windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(windows.Handle(job), h)
}

// ntResumeProcess resumes every thread of a process. os/exec keeps the
// handle of the suspended process's first thread to itself, so the thread
// cannot be resumed with ResumeThread; NtResumeProcess, which ntdll has
// exported since Windows XP and which Process Explorer and debuggers use,
// resumes a process by its handle. (The other way, finding the thread with
// a Toolhelp snapshot of every thread in the system, costs a snapshot per
// start.)
var ntResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")

func (winJobs) resume(cmd *exec.Cmd) error {
	if err := ntResumeProcess.Find(); err != nil {
		return err
	}
	h, err := openProcess(cmd, windows.PROCESS_SUSPEND_RESUME)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	if status, _, _ := ntResumeProcess.Call(uintptr(h)); status != 0 {
		return fmt.Errorf("NtResumeProcess: NTSTATUS %#x", status)
	}
	return nil
}

func (winJobs) abort(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func (winJobs) terminate(job jobHandle) error {
	return windows.TerminateJobObject(windows.Handle(job), 1)
}

// pids reads JOBOBJECT_BASIC_PROCESS_ID_LIST: two uint32 counts, then the
// ids, each a ULONG_PTR; the buffer grows until the list fits.
func (winJobs) pids(job jobHandle) ([]int, error) {
	const word = unsafe.Sizeof(uintptr(0))
	const head = (8 + word - 1) / word // the counts, in words
	for n := uintptr(64); ; n *= 4 {
		buf := make([]uintptr, head+n)
		err := windows.QueryInformationJobObject(windows.Handle(job), windows.JobObjectBasicProcessIdList,
			uintptr(unsafe.Pointer(&buf[0])), uint32(uintptr(len(buf))*word), nil)
		if errors.Is(err, windows.ERROR_MORE_DATA) {
			continue
		}
		if err != nil {
			return nil, err
		}
		listed := uintptr((*[2]uint32)(unsafe.Pointer(&buf[0]))[1])
		pids := make([]int, 0, listed)
		for _, id := range buf[head : head+min(listed, n)] {
			pids = append(pids, int(id))
		}
		return pids, nil
	}
}

func (winJobs) close(job jobHandle) error {
	return windows.CloseHandle(windows.Handle(job))
}
