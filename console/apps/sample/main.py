"""The sample app the Apps page deploys with "Deploy the sample" (console/apps/sample.py): the smallest
thing that shows the app format. An app is a zip holding an entrypoint that creates ``App("<name>")`` and
registers its actions with ``@app.action("<name>")``; ``actions.json`` beside it (a sandbox convention)
describes each action's input and output as JSON Schema, from which the console draws the invoke form.

Deployed to the real service, the same file runs with the vendor's SDK (``kernel``); the sandbox reads the
names and schemas and answers invocations itself.
"""

from kernel import App

app = App("sample-greeter")


@app.action("greet")
async def greet(ctx, payload):
    """Say hello to someone, in one of two tones."""
    name = payload.get("name") or "world"
    greeting = "Hello" if payload.get("tone") != "shout" else "HELLO"
    return {"message": f"{greeting}, {name}!"}


@app.action("page-title")
async def page_title(ctx, payload):
    """Open a page in a fresh browser session and return its title."""
    browser = await ctx.browsers.create(headless=True)
    try:
        page = await browser.page()
        await page.goto(payload["url"])
        return {"url": payload["url"], "title": await page.title()}
    finally:
        await browser.delete()
