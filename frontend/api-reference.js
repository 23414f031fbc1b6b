// The API reference at /docs: Swagger UI (bundled from swagger-ui-dist, served from this
// package, nothing fetched elsewhere) rendering /api/openapi.json. A reference, not a client:
// no "Try it out", so no page ever asks for a secret key.
import SwaggerUIBundle from "swagger-ui-dist/swagger-ui-bundle.js";
import "swagger-ui-dist/swagger-ui.css";
import "./api-reference.css";

const root = /** @type {HTMLElement} */ (document.getElementById("api"));

SwaggerUIBundle({
  url: root.dataset.document,
  domNode: root,
  deepLinking: true,
  // Every operation listed, grouped by tag: the visitor API apart from the management API.
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  defaultModelExpandDepth: 3,
  // The request body's schema (fields, types, limits) open beside its example.
  defaultModelRendering: "model",
  displayRequestDuration: false,
  supportedSubmitMethods: [],
  // The spec validator badge would fetch from another site.
  validatorUrl: null,
});
