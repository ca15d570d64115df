/* SPDX-License-Identifier: MIT */
/* OCR error codes: the API returns 0 on success or one of these (errno values). */
#ifndef STRATA_OCR_ERRORS_H
#define STRATA_OCR_ERRORS_H

#include <errno.h>

#define OCR_EPERM EPERM   /* operation not permitted (e.g. a second satisfy of a STICKY event) */
#define OCR_ENOENT ENOENT /* no such object */
#define OCR_EINTR EINTR
#define OCR_EIO EIO
#define OCR_ENXIO ENXIO
#define OCR_E2BIG E2BIG
#define OCR_EAGAIN EAGAIN
#define OCR_ENOMEM ENOMEM /* data block too large for its placement */
#define OCR_EACCES EACCES /* wrong access mode */
#define OCR_EFAULT EFAULT
#define OCR_EBUSY EBUSY
#define OCR_ENODEV ENODEV
#define OCR_EINVAL EINVAL /* invalid argument: unknown GUID, bad slot, wrong kind of object */
#define OCR_ENOSPC ENOSPC
#define OCR_ENOSYS ENOSYS /* not implemented */
#define OCR_ECANCELED ECANCELED
#define OCR_EGUIDEXISTS EEXIST
#define OCR_EACQ EALREADY /* the data block is already acquired */
#define OCR_EPEND EINPROGRESS

#endif /* STRATA_OCR_ERRORS_H */
