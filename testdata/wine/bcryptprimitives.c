/*
 * A stand-in bcryptprimitives.dll for running bank.exe under wine 8, which
 * has no ProcessPrng; Go 1.24 and later need it for their random numbers.
 * Test tooling only, built by .ci/windows with mingw: a real Windows has
 * the real DLL, and bank never ships this one.
 */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!RtlGenRandom(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
