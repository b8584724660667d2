/*
 * compare.h -- "seqscan --compare": the project's main job.  Every raw way
 *              of reading the table (C readers and the external commands
 *              they mirror), seqscan under read() and mmap() with and
 *              without verification, and PostgreSQL 15 scanning the same
 *              bytes, cold then warm, interleaved round by round.
 */
#ifndef HEAPSCAN_COMPARE_H
#define HEAPSCAN_COMPARE_H

/* Parse the --compare command line (argv includes "--compare") and run it;
 * returns the exit status. */
int compare_main(int argc, char **argv);

#endif
