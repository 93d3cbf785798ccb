/* A stand-in for Windows 10's bcryptprimitives.dll, for smoke tests under
   Wine 8.0, which lacks it: Go 1.22 and later need its ProcessPrng at start.
   Built by run.sh with mingw-w64; never part of mcpgen. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!RtlGenRandom(data, n)) {
            return FALSE;
        }
        data += n;
        len -= n;
    }
    return TRUE;
}
