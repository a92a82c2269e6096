/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The fleet endpoint (--metrics ADDR:PORT): a minimal HTTP/1.1 server answering GET /metrics
 * with what a render function writes, in the OpenMetrics text format when the scraper asks for
 * it (Prometheus does) and in Prometheus' text format 0.0.4 otherwise.
 *
 * Single-threaded and non-blocking: its sockets are polled by the session's event loop next
 * to the ring buffer, a connection is served in slices as its socket allows, and a slow or
 * silent client is dropped after a few seconds, so scraping never holds tracing up.
 */
#ifndef GPULEAK_LIVE_HTTP_H
#define GPULEAK_LIVE_HTTP_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The listening socket and up to this many connections less one. */
#define HTTP_MAX_FDS 9

/* Write the exposition to out; openmetrics: OpenMetrics 1.0 (else Prometheus 0.0.4). */
typedef void (*http_render_fn)(void *ctx, FILE *out, bool openmetrics);

struct http;

/*
 * Listen on addr: "PORT", ":PORT" (127.0.0.1), "ADDR:PORT" or "[IPv6]:PORT"; port 0 picks a
 * free one. 0, or -errno with the reason in why.
 */
/* Whether addr has one of those forms (the host is not looked up): 0 or -EINVAL. */
int http__check_addr(const char *addr);
int http__new(const char *addr, http_render_fn render, void *ctx, struct http **out, char *why,
	      size_t why_len);
void http__free(struct http *srv);
/* "http://127.0.0.1:9464/metrics": where it listens. */
const char *http__url(const struct http *srv);
/* The sockets to poll (at most max): returns how many were filled in. */
size_t http__pollfds(struct http *srv, struct pollfd *fds, size_t max);
/* Serve what poll() said is ready on the fds http__pollfds filled in. */
void http__handle(struct http *srv, const struct pollfd *fds, size_t n, uint64_t now_ns);
/* Scrapes answered so far. */
uint64_t http__scrapes(const struct http *srv);

#endif
