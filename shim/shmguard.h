/* Public interface of libshmguard.so for programs that want to name their
 * request explicitly (Python: ctypes.CDLL(None).shmguard_set_request). */
#ifndef SHMGUARD_H
#define SHMGUARD_H

#ifdef __cplusplus
extern "C" {
#endif

/* Files this thread creates under the shm roots from now on belong to
 * request id; NULL or "" returns the thread to SHMGUARD_REQUEST_ID and the
 * patterns.  Returns 0, or -1 with errno EINVAL for an unusable ID (empty
 * components, '/', '.', '..', longer than 255 bytes). */
int shmguard_set_request(const char *id);

#ifdef __cplusplus
}
#endif

#endif
