// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "live/http.h"

/* A request line and headers larger than this are not a scraper's: refused. */
#define REQ_MAX 8192
/* A client that has not sent its request or taken its answer by then is dropped. */
#define CONN_TIMEOUT_NS 5000000000ULL

#define CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define CT_PROMETHEUS  "text/plain; version=0.0.4; charset=utf-8"

struct conn {
	int fd; /* -1: free slot */
	uint64_t since_ns;
	char req[REQ_MAX];
	size_t req_len;
	char *resp; /* headers and body, once the request is complete */
	size_t resp_len, resp_off;
};

struct http {
	int lfd;
	http_render_fn render;
	void *ctx;
	struct conn conn[HTTP_MAX_FDS - 1];
	char url[128];
	uint64_t scrapes;
};

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->resp);
	c->fd = -1;
	c->resp = NULL;
	c->req_len = c->resp_len = c->resp_off = 0;
}

/* Split addr into host and port; the host defaults to loopback: never exposed unasked. */
static int split_addr(const char *addr, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon = strrchr(addr, ':');
	size_t n;

	if (!colon) {
		snprintf(host, hlen, "127.0.0.1");
		colon = addr - 1;
	} else if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close + 1 != colon)
			return -EINVAL;
		n = close - addr - 1;
		if (!n || n >= hlen)
			return -EINVAL;
		memcpy(host, addr + 1, n);
		host[n] = 0;
	} else {
		n = colon - addr;
		if (n >= hlen)
			return -EINVAL;
		memcpy(host, addr, n);
		host[n] = 0;
		if (!n)
			snprintf(host, hlen, "127.0.0.1");
		if (strchr(host, ':'))
			return -EINVAL; /* an IPv6 address needs its brackets */
	}
	n = strlen(colon + 1);
	if (!n || n >= plen || strspn(colon + 1, "0123456789") != n || atoi(colon + 1) > 65535)
		return -EINVAL;
	memcpy(port, colon + 1, n + 1);
	return 0;
}

int http__check_addr(const char *addr)
{
	char host[256], port[8];

	return split_addr(addr, host, sizeof(host), port, sizeof(port));
}

int http__new(const char *addr, http_render_fn render, void *ctx, struct http **out, char *why,
	      size_t why_len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[8], name[INET6_ADDRSTRLEN];
	struct http *srv;
	int err, one = 1;
	size_t i;

	*out = NULL;
	if (split_addr(addr, host, sizeof(host), port, sizeof(port))) {
		snprintf(why, why_len,
			 "not an address: give PORT, :PORT, ADDR:PORT or "
			 "[IPv6]:PORT");
		return -EINVAL;
	}
	err = getaddrinfo(host, port, &hints, &ai);
	if (err) {
		snprintf(why, why_len, "%s: %s", host, gai_strerror(err));
		return -EINVAL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		freeaddrinfo(ai);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < HTTP_MAX_FDS - 1; i++)
		srv->conn[i].fd = -1;
	srv->render = render;
	srv->ctx = ctx;
	srv->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0)
		goto fail;
	setsockopt(srv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(srv->lfd, ai->ai_addr, ai->ai_addrlen) || listen(srv->lfd, 16) ||
	    getsockname(srv->lfd, (struct sockaddr *)&ss, &sl))
		goto fail;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, name, sizeof(name));
		snprintf(srv->url, sizeof(srv->url), "http://[%s]:%u/metrics", name,
			 ntohs(s6->sin6_port));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, name, sizeof(name));
		snprintf(srv->url, sizeof(srv->url), "http://%s:%u/metrics", name,
			 ntohs(s4->sin_port));
	}
	freeaddrinfo(ai);
	*out = srv;
	return 0;
fail:
	err = -errno;
	snprintf(why, why_len, "cannot listen on %s port %s: %s", host, port, strerror(-err));
	freeaddrinfo(ai);
	if (srv->lfd >= 0)
		close(srv->lfd);
	free(srv);
	return err;
}

void http__free(struct http *srv)
{
	size_t i;

	if (!srv)
		return;
	for (i = 0; i < HTTP_MAX_FDS - 1; i++)
		conn_close(&srv->conn[i]);
	if (srv->lfd >= 0)
		close(srv->lfd);
	free(srv);
}

const char *http__url(const struct http *srv)
{
	return srv->url;
}

uint64_t http__scrapes(const struct http *srv)
{
	return srv->scrapes;
}

size_t http__pollfds(struct http *srv, struct pollfd *fds, size_t max)
{
	size_t i, n = 0;

	if (!max)
		return 0;
	fds[n++] = (struct pollfd){.fd = srv->lfd, .events = POLLIN};
	for (i = 0; i < HTTP_MAX_FDS - 1 && n < max; i++)
		fds[n++] = (struct pollfd){.fd = srv->conn[i].fd,
					   .events = srv->conn[i].resp ? POLLOUT : POLLIN};
	return n;
}

/* The value of header name in a complete request, or NULL; stops at the end of its line. */
static const char *header(const char *req, const char *name, size_t *len)
{
	size_t n = strlen(name);
	const char *p = strstr(req, "\r\n");

	while (p && p[2] != '\r') {
		p += 2;
		if (!strncasecmp(p, name, n) && p[n] == ':') {
			p += n + 1;
			p += strspn(p, " \t");
			*len = strcspn(p, "\r\n");
			return p;
		}
		p = strstr(p, "\r\n");
	}
	return NULL;
}

static bool accepts_openmetrics(const char *req)
{
	size_t len;
	const char *v = header(req, "Accept", &len);

	return v && memmem(v, len, "application/openmetrics-text", 28);
}

/* The request is complete: make the whole answer. */
static void respond(struct http *srv, struct conn *c)
{
	char *body = NULL, *resp = NULL;
	size_t body_len = 0, resp_len = 0;
	const char *status = "200 OK", *type = CT_PROMETHEUS;
	bool head = !strncmp(c->req, "HEAD ", 5), om = false;
	FILE *f;

	if (strncmp(c->req, "GET ", 4) && !head) {
		status = "405 Method Not Allowed";
		body = strdup("GET /metrics\n");
	} else if (strncmp(c->req + (head ? 5 : 4), "/metrics", 8) ||
		   !strchr(" ?", c->req[(head ? 5 : 4) + 8])) {
		status = "404 Not Found";
		body = strdup("gpuleak serves /metrics\n");
	} else {
		om = accepts_openmetrics(c->req);
		type = om ? CT_OPENMETRICS : CT_PROMETHEUS;
		f = open_memstream(&body, &body_len);
		if (f) {
			srv->render(srv->ctx, f, om);
			fclose(f);
		}
		srv->scrapes++;
	}
	if (!body) {
		conn_close(c);
		return;
	}
	body_len = strlen(body);
	f = open_memstream(&resp, &resp_len);
	if (!f) {
		free(body);
		conn_close(c);
		return;
	}
	if (strncmp(status, "200", 3))
		type = "text/plain";
	fprintf(f,
		"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		"Connection: close\r\n\r\n",
		status, type, body_len);
	if (!head)
		fwrite(body, 1, body_len, f);
	fclose(f);
	free(body);
	c->resp = resp;
	c->resp_len = resp_len;
	c->resp_off = 0;
}

static void on_readable(struct http *srv, struct conn *c)
{
	ssize_t n = recv(c->fd, c->req + c->req_len, REQ_MAX - 1 - c->req_len, 0);

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		conn_close(c);
		return;
	}
	c->req_len += n;
	c->req[c->req_len] = 0;
	if (strstr(c->req, "\r\n\r\n"))
		respond(srv, c);
	else if (c->req_len == REQ_MAX - 1)
		conn_close(c);
}

static void on_writable(struct conn *c)
{
	ssize_t n = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			conn_close(c);
		return;
	}
	c->resp_off += n;
	if (c->resp_off == c->resp_len)
		conn_close(c);
}

void http__handle(struct http *srv, const struct pollfd *fds, size_t n, uint64_t now_ns)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		struct conn *c = NULL;

		if (fds[i].fd < 0 || !fds[i].revents)
			continue;
		for (j = 0; j < HTTP_MAX_FDS - 1 && !c; j++)
			if (srv->conn[j].fd == fds[i].fd)
				c = &srv->conn[j];
		if (!c)
			continue;
		if (fds[i].revents & (POLLERR | POLLNVAL))
			conn_close(c);
		else if (c->resp && (fds[i].revents & POLLOUT))
			on_writable(c);
		else if (!c->resp && (fds[i].revents & (POLLIN | POLLHUP)))
			on_readable(srv, c);
	}
	for (j = 0; j < HTTP_MAX_FDS - 1; j++)
		if (srv->conn[j].fd >= 0 && now_ns - srv->conn[j].since_ns > CONN_TIMEOUT_NS)
			conn_close(&srv->conn[j]);
	if (n && (fds[0].revents & POLLIN)) {
		for (;;) {
			int fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			struct conn *c = NULL;

			if (fd < 0)
				break;
			for (j = 0; j < HTTP_MAX_FDS - 1 && !c; j++)
				if (srv->conn[j].fd < 0)
					c = &srv->conn[j];
			/* Full: this one is turned away rather than any client waited on. */
			if (!c) {
				close(fd);
				continue;
			}
			c->fd = fd;
			c->since_ns = now_ns;
			c->req_len = 0;
		}
	}
}
