import type { PageAssets } from './assets.js';
import { fillTemplate, type Html, html } from './html.js';
import { Code, type PrivacyPolicy, type RichText, type TermsOfUse } from './legal.js';

/** `/privacy` and `/terms` as pages: the landing page's stylesheet, header and footer, no script. */

function richHtml(text: RichText): Html[] {
  return text.map((part) => (part instanceof Code ? html`<code>${part.text}</code>` : html`${part}`));
}

const paragraphs = (sentences: readonly RichText[]): Html[] =>
  sentences.map((sentence) => html`<p>${richHtml(sentence)}</p>`);

const codeOrDash = (value: Code | null): Html =>
  value === null ? html`–` : html`<code>${value.text}</code>`;

/**
 * The operator's own words, as text: a link only when it is an https URL or a mail address, never a
 * scheme it could choose (`javascript:`). `fallback`: what follows when no contact was given.
 */
function contactOf(contact: string | null, fallback: string): Html {
  if (contact === null) {
    return html`<p id="operator">The operator of this instance gave no contact (<code>OPERATOR_CONTACT</code> is not set).${fallback}</p>`;
  }
  const link =
    /^https:\/\/\S+$/.test(contact) && URL.canParse(contact)
      ? html`<a href="${contact}" rel="nofollow">${contact}</a>`
      : /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(contact)
        ? html`<a href="mailto:${contact}">${contact}</a>`
        : html`${contact}`;
  return html`<p id="operator">Questions about this instance go to its operator: <strong id="operator-contact">${link}</strong></p>`;
}

function pageOf(assets: PageAssets, version: string, title: string, description: string, content: Html) {
  return fillTemplate(assets.legal, {
    stylesheet: assets.stylesheet.path,
    title,
    description,
    content,
    version,
  });
}

export function renderPrivacyPage(assets: PageAssets, policy: PrivacyPolicy, version: string): string {
  const { facts } = policy;
  const intents = policy.intents.map(
    (intent) =>
      html`<tr><td><code>${intent.name}</code></td><td data-label="Privileged">${intent.privileged ? 'yes' : 'no'}</td><td data-label="For">${richHtml(intent.why)}</td></tr>`,
  );
  const privileged = policy.intents.filter((intent) => intent.privileged).map((intent) => intent.name);
  const names = privileged.map((name) => html`<code>${name}</code>`);
  const list =
    names.length > 1
      ? html`${names.slice(0, -1).flatMap((name, i) => (i === 0 ? [name] : [html`, `, name]))} and ${names.at(-1) ?? html``}`
      : html`${names}`;
  const privilegedSentence =
    names.length === 0
      ? html`None of them is privileged.`
      : html`Discord calls ${list} privileged: it shows their data only to the apps it allows, and reviews an app
that uses them once it reaches more than 10,000 users, then every year.`;
  const recorded = policy.recorded.map(
    (item) => html`<tr><td>${richHtml(item.what)}</td><td data-label="Kept">${richHtml(item.kept)}</td></tr>`,
  );
  const controls = policy.controls.map(
    (control) =>
      html`<tr><td>${richHtml(control.what)}</td><td data-label="With the bot">${codeOrDash(control.bot)}</td><td class="api" data-label="With the API">${codeOrDash(control.api)}</td></tr>`,
  );
  const guilds =
    facts.guildIds === null
      ? html``
      : html`<ul class="ids" aria-label="Monitored servers">${facts.guildIds.map((id) => html`<li><code>${id}</code></li>`)}</ul>`;
  const content = html`
<h1 id="title">Privacy on this instance</h1>
<p class="lede">This instance of Presently runs a Discord bot that sees the members of the servers it is in, and
serves their presence through an open API. This page says what it records and for how long, what Discord
shows the bot, who is monitored here, and how you control it. It is made from the instance's configuration:
it says what this instance does.</p>
${contactOf(facts.operatorContact, ' Everything in your control below, erasing everything kept of you included, you do yourself.')}

<section aria-labelledby="who">
<h2 id="who">Who is monitored</h2>
${paragraphs(policy.whoIsMonitored)}
${guilds}
</section>

<section aria-labelledby="recorded">
<h2 id="recorded">What is recorded, and for how long</h2>
<div class="table">
<table>
<thead><tr><th scope="col">What</th><th scope="col">Kept</th></tr></thead>
<tbody>${recorded}</tbody>
</table>
</div>
<p id="retention">${richHtml(policy.retention)}</p>
</section>

<section aria-labelledby="intents">
<h2 id="intents">What Discord shows the bot</h2>
<p>The bot connects to Discord with these gateway intents. ${privilegedSentence}</p>
<div class="table">
<table class="intents">
<thead><tr><th scope="col">Intent</th><th scope="col">Privileged</th><th scope="col">What it is for</th></tr></thead>
<tbody>${intents}</tbody>
</table>
</div>
</section>

<section aria-labelledby="controls">
<h2 id="controls">What you control</h2>
<p>Send the bot its commands in a direct message: its prefix here is <code>${facts.commandPrefix}</code>.
Or use the API with your key (<code>Authorization: &lt;key&gt;</code>). A setting takes effect within a second
everywhere: REST, sockets, event streams, webhooks, cards and history.</p>
<div class="table">
<table class="controls">
<thead><tr><th scope="col">To</th><th scope="col">With the bot</th><th scope="col">With the API</th></tr></thead>
<tbody>${controls}</tbody>
</table>
</div>
${paragraphs(policy.optingOut)}
</section>
`;
  return pageOf(
    assets,
    version,
    'Privacy',
    'What this Presently instance records, for how long, what Discord shows its bot, and how you control it.',
    content,
  );
}

export function renderTermsPage(assets: PageAssets, terms: TermsOfUse, version: string): string {
  const sections = terms.terms.map(
    (term) => html`<section><h2>${term.title}</h2><p>${richHtml(term.text)}</p></section>`,
  );
  const content = html`
<h1 id="title">Terms of use</h1>
<p class="lede">This instance of Presently serves Discord presences through an open API. Using it means
accepting these terms.</p>
${contactOf(terms.facts.operatorContact, '')}
${sections}
<p>What this instance records about you, and how you control it: <a href="/privacy">Privacy</a>.</p>
`;
  return pageOf(
    assets,
    version,
    'Terms of use',
    'The terms of use of this Presently instance: rate limits, abuse, no warranty.',
    content,
  );
}
