/* server.h -- an OpenAI-compatible HTTP server over an online engine (online.h), on
 * libmicrohttpd (one polling thread) and jansson.
 *
 * Endpoints: POST /v1/completions and /v1/chat/completions (streamed as server-sent
 * events the way OpenAI streams them, `data: {chunk}` ... `data: [DONE]`, with
 * stream_options.include_usage; or one JSON body), GET /v1/models, /health and
 * /metrics (Prometheus text, vLLM's metric names).  A request's body is at most
 * PB_SERVER_MAX_BODY bytes.  Requests are parsed and checked before they reach the
 * engine; errors are OpenAI's error object {"error": {message, type, param, code}}
 * with the HTTP status: 400 (bad JSON, a bad or unsupported field, a prompt plus
 * max_tokens over the model's length), 401 (--api-key set and not given as
 * `Authorization: Bearer K`), 404 (unknown path or model), 413 (body too large), 429
 * (the engine's waiting limit), 503 (shutting down).
 *
 * Lifetimes: a request's context lives until both its connection completed and its
 * submission got its terminal event (online.h).  A client that goes away is noticed
 * by the connection's completion, or, while its connection waits suspended, by a
 * watchdog that polls the suspended sockets every 20 ms: its submission is aborted,
 * which frees its KV blocks before the engine's next step. */
#ifndef PB_SERVER_H
#define PB_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "online.h"
#include "pb.h"
#include "tokenizer.h"

#define PB_SERVER_MAX_BODY (1 << 20)

typedef struct {
    const char *host;           /* numeric IPv4 address to bind ("127.0.0.1")           */
    int port;                   /* 0: any free port (pb_server_port says which)         */
    const char *api_key;        /* NULL: none asked for                                 */
    const char *model;          /* the served model's name (/v1/models, "model")        */
    int32_t max_model_len;      /* prompt + max_tokens bound                            */
    int32_t max_beam;           /* widest beam / most samples the engine takes          */
    int max_connections;        /* libmicrohttpd's limit (beyond it: refused)           */
    const pb_tok *tok;          /* text <-> ids; NULL: the fallback of cmd_serve.c      */
} pb_server_params;

typedef struct pb_server pb_server;

/* The server's state; pb_server_event is the online loop's event callback with it as
   user.  Then pb_server_listen binds and serves with online. */
pb_server *pb_server_create(const pb_server_params *p);
void pb_server_event(void *user, const pb_online_event *ev);
pb_status pb_server_listen(pb_server *s, pb_online *online, char *err, size_t err_n);
int pb_server_port(const pb_server *s);
/* New requests get 503 from now on (a drain). */
void pb_server_quiesce(pb_server *s);
/* Requests submitted whose connection has not completed (its answer not all sent). */
int pb_server_open_requests(pb_server *s);
/* After pb_online_stop: stop listening, free everything. */
void pb_server_destroy(pb_server *s);

#endif /* PB_SERVER_H */
