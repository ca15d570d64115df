/* SPDX-License-Identifier: MIT */
/* OCR error codes: the API returns 0 on success or one of these. The
 * numbers are the reference runtime's (loosely Linux's errno values), written
 * out, so that this header, like the reference's, brings in no <errno.h>: a
 * program may name its own variables errno or EINVAL. */
#ifndef STRATA_OCR_ERRORS_H
#define STRATA_OCR_ERRORS_H

#define OCR_EPERM 1      /* operation not permitted (e.g. a second satisfy of a STICKY event) */
#define OCR_ENOENT 2     /* no such object; a hint property that is not set */
#define OCR_EINTR 4      /* interrupted runtime call */
#define OCR_EIO 5        /* I/O error */
#define OCR_ENXIO 6      /* no such device or address */
#define OCR_E2BIG 7      /* argument list too long */
#define OCR_ENOEXEC 8    /* exec format error */
#define OCR_EAGAIN 11    /* try again */
#define OCR_ENOMEM 12    /* out of memory; data block too large for its placement */
#define OCR_EACCES 13    /* wrong access mode; a data block the EDT does not hold */
#define OCR_EFAULT 14    /* bad address */
#define OCR_EBUSY 16     /* busy: a CHANNEL or COLLECTIVE event past its maxGen */
#define OCR_ENODEV 19    /* no such device */
#define OCR_EINVAL 22    /* invalid argument: unknown GUID, bad slot, wrong kind of object */
#define OCR_ENOSPC 28    /* no space left */
#define OCR_ESPIPE 29    /* illegal seek */
#define OCR_EROFS 30     /* read-only */
#define OCR_EDOM 33      /* argument out of domain */
#define OCR_ERANGE 34    /* result not representable */
#define OCR_ENOSYS 38    /* not implemented */
#define OCR_ENOTEMPTY 39 /* not empty */
#define OCR_ENOTSUP 95   /* not supported */

/* OCR's own codes. */
#define OCR_EGUIDEXISTS 100 /* an object lives at that (labeled) GUID already */
#define OCR_EACQ 101        /* the data block is already acquired */
#define OCR_EPEND 102       /* the operation is pending */
#define OCR_ENOP 103        /* the operation was a no-op */
#define OCR_EDEFERRED 104   /* the operation was deferred */
#define OCR_ECANCELED 125   /* the operation was cancelled (e.g. the program shut down first) */

#endif /* STRATA_OCR_ERRORS_H */
