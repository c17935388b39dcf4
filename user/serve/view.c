// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The live view page (user/serve/view.html), built into the binary: GET / serves it as it is. */
#include <stddef.h>
#include "httpd.h"

__asm__(".section .rodata\n"
	".global rs_view_html\n"
	".type rs_view_html, @object\n"
	"rs_view_html:\n"
	".incbin \"user/serve/view.html\"\n"
	".global rs_view_html_end\n"
	"rs_view_html_end:\n"
	".byte 0\n"
	".previous\n");

extern const char rs_view_html[], rs_view_html_end[];

const char *httpd__view(size_t *len)
{
	*len = (size_t)(rs_view_html_end - rs_view_html);
	return rs_view_html;
}
