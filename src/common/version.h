/* version — the tool's version, written into every results document and printed by --version. */
#ifndef DSP_VERSION_H
#define DSP_VERSION_H
#define DSPERF_VERSION "0.1.0"
#endif
