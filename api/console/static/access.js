// The console's access key: once the server holds access keys, every read needs one. The
// console asks for a reader key (any role reads) the first time a read is refused, keeps
// it for this tab only (sessionStorage: never in a URL, never sent anywhere else), and
// sends it as `Authorization: Bearer <key>` on its reads and its live stream.

const KEY = "planledger.reader-key";
const $ = (id) => document.getElementById(id);
let asking = null;  // one dialog for every read refused at once

export function withKey(headers = {}) {
  const key = sessionStorage.getItem(KEY);
  return key && !headers.Authorization ? { ...headers, Authorization: `Bearer ${key}` } : headers;
}

// Ask for a key (the last one was missing or refused) and resolve once one is entered.
export function askForKey(refusal) {
  if (asking) return asking;
  const dialog = $("key-dialog");
  const had = sessionStorage.getItem(KEY);
  sessionStorage.removeItem(KEY);
  $("key-error").textContent = had ? `That key was refused: ${refusal}` : "";
  dialog.oncancel = (event) => event.preventDefault();  // nothing can be read without one
  asking = new Promise((resolve) => {
    const form = $("key-form");
    const submit = (event) => {
      event.preventDefault();
      const value = $("key-input").value.trim();
      if (!value) { $("key-error").textContent = "Enter an access key."; return; }
      sessionStorage.setItem(KEY, value);
      $("key-input").value = "";
      form.removeEventListener("submit", submit);
      dialog.close();
      asking = null;
      resolve();
    };
    form.addEventListener("submit", submit);
  });
  if (!dialog.open) dialog.showModal();
  return asking;
}
